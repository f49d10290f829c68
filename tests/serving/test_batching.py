"""Concurrent requests share model calls, and /metrics shows it."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.db]

SINGLE = "/v1/inference/intent-classify"
BATCH = "/v1/inference/intent-classify/batch"


def _metric(text: str, name: str, labels: str = "") -> float:
    """Sum of a metric's samples whose labels contain ``labels`` (0 when absent)."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+-]+)$", line)
        if match and labels in (match.group(1) or ""):
            total += float(match.group(2))
    return total


async def _concurrent(url: str, headers: dict[str, str], n: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        return await asyncio.gather(
            *(client.post(SINGLE, json={"message": f"where is my order {i}"}) for i in range(n))
        )


def test_concurrent_single_requests_share_model_calls(
    ray_live_server: str, auth_headers: dict[str, str]
) -> None:
    n = 48
    before = httpx.get(f"{ray_live_server}/metrics").text
    responses = asyncio.run(_concurrent(ray_live_server, auth_headers, n))
    after = httpx.get(f"{ray_live_server}/metrics").text
    assert [r.status_code for r in responses] == [200] * n

    calls = _metric(after, "switchyard_inference_batch_size_count") - _metric(
        before, "switchyard_inference_batch_size_count"
    )
    messages = _metric(after, "switchyard_inference_batch_size_sum") - _metric(
        before, "switchyard_inference_batch_size_sum"
    )
    assert messages == n
    assert 1 <= calls < n


def test_batch_request_is_few_model_calls(
    ray_live_server: str, auth_headers: dict[str, str]
) -> None:
    before = httpx.get(f"{ray_live_server}/metrics").text
    entries = [{"id": str(i), "message": f"cancel order {i}"} for i in range(100)]
    response = httpx.post(
        f"{ray_live_server}{BATCH}", json={"messages": entries}, headers=auth_headers, timeout=60
    )
    assert response.status_code == 200
    after = httpx.get(f"{ray_live_server}/metrics").text
    calls = _metric(after, "switchyard_inference_batch_size_count") - _metric(
        before, "switchyard_inference_batch_size_count"
    )
    assert 1 <= calls <= 2  # 100 messages in calls of at most 64, not 100 calls


def test_metrics_count_latency_predictions_and_requests(
    ray_live_server: str, auth_headers: dict[str, str]
) -> None:
    before = httpx.get(f"{ray_live_server}/metrics").text
    body = httpx.post(
        f"{ray_live_server}{SINGLE}", json={"message": "I want a refund"}, headers=auth_headers
    ).json()
    after = httpx.get(f"{ray_live_server}/metrics").text

    def delta(name: str, labels: str = "") -> float:
        return _metric(after, name, labels) - _metric(before, name, labels)

    assert delta("switchyard_predictions_total", f'intent="{body["top_intent"]}"') == 1
    assert delta("switchyard_inference_latency_seconds_count", f'endpoint="{SINGLE[3:]}"') == 1
    assert delta("switchyard_http_requests_total", 'status="200"') >= 1
