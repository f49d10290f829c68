"""The inference fast path answers exactly as the FastAPI routes it stands in front of."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY

from core.settings import Settings
from switchyard.app import create_app
from switchyard.inference_fast_path import SwitchyardAPI
from tests.serving.in_process import InProcessClassifier

pytestmark = [pytest.mark.db]

SINGLE = "/v1/inference/intent-classify"
BATCH = "/v1/inference/intent-classify/batch"
COMPARED_HEADERS = (
    "content-type", "www-authenticate", "allow", "retry-after", "x-request-id", "location"
)  # fmt: skip

# (method, path, body, authenticated): the answers a caller relies on, good and bad.
REQUESTS: list[tuple[str, str, Any, bool]] = [
    ("POST", SINGLE, {"message": "where is my parcel?", "top_k": 3}, True),
    ("POST", SINGLE, {"message": "yes please", "conversation_history": [
        {"role": "agent", "text": "Shall I cancel order 1234?"}]}, True),
    ("POST", SINGLE, {"message": "x", "threshold": 0.99}, True),
    ("POST", BATCH, {"messages": [{"id": "a", "message": "refund me"},
                                  {"id": "b", "message": "great service"}], "top_k": 2}, True),
    ("POST", SINGLE, {"message": "é" * 2049}, True),
    ("POST", BATCH, {"messages": [{"id": "a", "message": "hi"}, {"id": "a", "message": "yo"}]},
     True),
    ("POST", SINGLE, {"message": 5}, True),
    ("POST", SINGLE, b"{not json", True),
    ("POST", SINGLE, {"message": "where is my parcel?"}, False),
    ("GET", SINGLE, None, True),
    ("POST", SINGLE + "/", {"message": "hi"}, True),
]  # fmt: skip


@pytest.fixture
def router_only_app(
    settings: Settings, db: None, in_process_classifier: InProcessClassifier
) -> FastAPI:
    """The same front with the fast path switched off: every request through FastAPI."""
    app = create_app(settings, classifier=in_process_classifier)
    assert isinstance(app, SwitchyardAPI)
    app.fast_path = None
    return app


def _answer(base: str, request: tuple[str, str, Any, bool], token: dict[str, str]) -> tuple:
    method, path, body, authenticated = request
    headers = {"X-Request-ID": "req-compare-0001", **(token if authenticated else {})}
    content = body if isinstance(body, bytes) else None
    json_body = None if isinstance(body, bytes) or body is None else body
    response = httpx.request(
        method, base + path, json=json_body, content=content, headers=headers, timeout=30
    )
    payload = response.json() if response.content else None
    if isinstance(payload, dict):
        payload.pop("latency_ms", None)
    headers_seen = {name: response.headers.get(name) for name in COMPARED_HEADERS}
    if headers_seen["location"]:  # a redirect names the server it came from
        headers_seen["location"] = headers_seen["location"].removeprefix(base)
    return response.status_code, payload, headers_seen


def test_the_fast_path_and_the_router_give_the_same_answers(
    app: FastAPI,
    router_only_app: FastAPI,
    serve_with: Callable[[FastAPI], str],
    auth_headers: dict[str, str],
) -> None:
    assert isinstance(app, SwitchyardAPI) and app.fast_path is not None
    fast, routed = serve_with(app), serve_with(router_only_app)
    statuses = set()
    for request in REQUESTS:
        answer = _answer(fast, request, auth_headers)
        assert answer == _answer(routed, request, auth_headers), request
        statuses.add(answer[0])
    # The comparison covered answers and refusals of every kind, not one shape many times.
    assert statuses >= {200, 400, 401, 405, 422}


def test_requests_through_the_fast_path_count_under_the_routes_own_name(
    app: FastAPI, serve_with: Callable[[FastAPI], str], auth_headers: dict[str, str]
) -> None:
    labels = {"endpoint": "/inference/intent-classify", "method": "POST", "status": "200"}
    before = REGISTRY.get_sample_value("switchyard_http_requests_total", labels) or 0.0
    base = serve_with(app)
    for _ in range(3):
        response = httpx.post(
            base + SINGLE, json={"message": "hello"}, headers=auth_headers, timeout=30
        )
        assert response.status_code == 200
    assert REGISTRY.get_sample_value("switchyard_http_requests_total", labels) == before + 3


@pytest.mark.parametrize(
    ("method", "path", "taken"),
    [
        ("POST", SINGLE, True),
        ("POST", BATCH, True),
        ("GET", SINGLE, False),
        ("POST", SINGLE + "/", False),
        ("POST", "/v1/link-token", False),
        ("POST", "/inference/intent-classify", False),
    ],
)
def test_the_fast_path_takes_only_posts_to_the_two_routes(
    app: FastAPI, method: str, path: str, taken: bool
) -> None:
    assert isinstance(app, SwitchyardAPI) and app.fast_path is not None
    assert app.fast_path.takes({"type": "http", "method": method, "path": path}) is taken
