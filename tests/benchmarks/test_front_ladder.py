"""The inference benchmark splits the front's CPU into server, request handling and Ray call."""

from __future__ import annotations

import http.server
import json
import socketserver
import threading

import httpx
import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from benchmarks.bench_inference import _calls_and_messages, front_ladder_lines
from benchmarks.paced_front import PacedModel, bare_app


def _rung(name: str, cpu_ms: float) -> dict[str, object]:
    return {
        "rung": name,
        "requests_per_s": 200.0,
        "p50_ms": 150.0,
        "messages_per_call": 8.0,
        "front_cpu_ms": cpu_ms,
    }


def test_the_ladder_names_what_each_rung_adds_and_the_bare_front() -> None:
    out = {
        "args": {"clients": 32},
        "front_ladder": [_rung("bare", 0.26), _rung("app", 0.6), _rung("shipped", 0.8)],
    }
    lines = front_ladder_lines(out)
    assert "| bare | 200.0 | 150.0 | 8.0 | 0.26 |" in lines
    summary = lines[-1]
    assert "the grouping queue 0.260 ms" in summary
    assert "request handling +0.340 ms" in summary
    assert "deployment-handle call +0.200 ms" in summary


def test_no_ladder_no_lines() -> None:
    assert front_ladder_lines({"args": {"clients": 32}}) == []


async def test_the_paced_model_takes_its_time_per_message_and_answers_each() -> None:
    waits: list[float] = []

    async def recorded_sleep(seconds: float) -> None:
        waits.append(seconds)

    model = PacedModel(ms_per_message=20, sleep=recorded_sleep)
    result = await model.classify.remote([("a", None), ("b", None), ("c", None)])
    assert waits == [pytest.approx(0.06)]
    assert result.probabilities.shape == (3, len(result.labels))
    assert result.probabilities.sum(axis=1) == pytest.approx([1.0, 1.0, 1.0])


async def test_the_bare_front_answers_a_message_with_an_intent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWITCHYARD_BENCH_MS_PER_MESSAGE", "1")
    transport = httpx.ASGITransport(app=bare_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://front") as client:
        response = await client.post(
            "/v1/inference/intent-classify", content=json.dumps({"message": "where is it"})
        )
        metrics = await client.get("/metrics")
    assert response.status_code == 200
    assert response.json()["model_version"] == "paced"
    assert response.json()["intent"].startswith("intent_")
    assert "switchyard_inference_batch_size_count" in metrics.text


def test_calls_and_messages_are_read_from_the_fronts_metrics_over_http() -> None:
    registry = CollectorRegistry()
    batch_sizes = Histogram(
        "switchyard_inference_batch_size", "Messages per call.", registry=registry
    )
    for size in (3, 5, 9):
        batch_sizes.observe(size)
    body = generate_latest(registry)

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with socketserver.TCPServer(("127.0.0.1", 0), Metrics) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            found = _calls_and_messages(f"http://127.0.0.1:{server.server_address[1]}")
        finally:
            server.shutdown()
    assert found == (3.0, 17.0)
