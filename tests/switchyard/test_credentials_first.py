"""A /v1 platform request's credentials are judged before its body is read: a caller without a
valid token cannot make the front read or parse a body (FastAPI parses it before any
dependency runs). The app is driven as ASGI, with a body source that records whether it was
read."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.types import Message

pytestmark = pytest.mark.db

# A body the parser would spend a long time on, were it read.
NESTED = b"[" + b",".join([b"[" * 60 + b"]" * 60] * 2000) + b"]"


class Exchange:
    """One request through the app: its body on demand, the answer kept."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.body_read = False
        self.status = 0
        self.headers: dict[str, str] = {}
        self.answer = b""

    async def receive(self) -> Message:
        self.body_read = True
        return {"type": "http.request", "body": self.body, "more_body": False}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            self.answer += message.get("body", b"")

    def json(self) -> Any:
        return json.loads(self.answer)


async def _post(app: FastAPI, path: str, body: bytes, authorization: str | None) -> Exchange:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode()))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": ("203.0.113.9", 40000),
        "server": ("testserver", 80),
    }  # fmt: skip
    exchange = Exchange(body)
    await app(scope, exchange.receive, exchange.send)
    return exchange


@pytest.mark.parametrize(
    "authorization", [None, "Basic dXNlcjpwYXNz", "Bearer sy_not_a_token"], ids=str
)
async def test_no_valid_token_is_refused_before_the_body_is_read(
    app: FastAPI, authorization: str | None
) -> None:
    exchange = await _post(app, "/v1/webhook", NESTED, authorization)
    assert exchange.status == 401
    assert exchange.json()["error"] == "UNAUTHORIZED"
    assert exchange.headers["connection"] == "close"  # the unread body ends the connection
    assert not exchange.body_read


async def test_a_valid_token_reads_and_judges_the_body_as_before(
    app: FastAPI, make_token: Callable[..., str]
) -> None:
    token = f"Bearer {make_token()}"
    too_deep = await _post(app, "/v1/webhook", b"[" * 65 + b"]" * 65, token)
    assert too_deep.body_read and too_deep.status == 400
    bad = await _post(app, "/v1/webhook", json.dumps({"events": 3}).encode(), token)
    assert bad.body_read and bad.status == 400 and bad.json()["error"] == "INVALID_REQUEST"


async def test_inference_routes_keep_their_own_order(app: FastAPI) -> None:
    # They authenticate before reading their body themselves; the check here leaves them be.
    exchange = await _post(app, "/v1/inference/intent-classify", b'{"message": "hi"}', None)
    assert exchange.status == 401
    assert "connection" not in exchange.headers
