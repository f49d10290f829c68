"""ASGI middleware: request ids, access logs and request metrics."""

from __future__ import annotations

import logging
import time
from functools import lru_cache
from typing import Any

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.errors import error_response
from core.request_context import accept_or_create, reset_request_id, set_request_id
from switchyard.http_metrics import HTTP_LATENCY, HTTP_REQUESTS

log = structlog.get_logger("switchyard.http")
# Asked before each access-log line: a line the level drops costs nothing to build.
_log_gate = logging.getLogger("switchyard.http")


@lru_cache(maxsize=1024)
def _request_counter(endpoint: str, method: str, status: int) -> Any:
    """The counter of one route, method and status (``labels`` takes a lock per call)."""
    return HTTP_REQUESTS.labels(endpoint, method, str(status))


@lru_cache(maxsize=256)
def _latency_histogram(endpoint: str) -> Any:
    return HTTP_LATENCY.labels(endpoint)


_QUIET_PATHS = {"/healthz", "/readyz", "/metrics"}


class RequestContextMiddleware:
    """Gives each request an id (``X-Request-ID``), logs it and counts it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = None
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                incoming = value.decode("latin-1")
                break
        request_id = accept_or_create(incoming)
        token = set_request_id(request_id)
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        response_started = False
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            # Answer here, inside the request context, so the body and header carry the id.
            log.exception("unhandled_error", error_type=type(exc).__name__)
            if response_started:
                raise
            response = error_response(
                500, "INTERNAL_ERROR", "unexpected server error; quote the request_id"
            )
            await response(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            _request_counter(endpoint, scope["method"], status).inc()
            _latency_histogram(endpoint).observe(elapsed)
            if scope["path"] not in _QUIET_PATHS and _log_gate.isEnabledFor(logging.INFO):
                log.info(
                    "http_request",
                    method=scope["method"],
                    path=scope["path"],
                    status=status,
                    duration_ms=round(elapsed * 1000, 2),
                )
            reset_request_id(token)
