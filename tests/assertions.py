"""Assertions every area's tests share."""

from __future__ import annotations

from typing import Any, Protocol


class _Response(Protocol):
    """What both httpx and requests responses offer, read-only."""

    @property
    def status_code(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def headers(self) -> Any: ...

    def json(self) -> Any: ...


def assert_error(response: _Response, status: int, code: str) -> dict[str, Any]:
    """The response is the contract's error body with this status and code, and nothing else."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "request_id"}, body
    assert body["error"] == code
    assert body["message"]
    assert body["request_id"] == response.headers["x-request-id"]
    return body
