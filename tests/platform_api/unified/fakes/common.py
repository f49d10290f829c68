"""What every provider fake shares: a request log and scripted failures.

Fakes are real HTTP servers (FastAPI apps served by uvicorn on loopback). A test scripts a
failure by queueing a provider-shaped response (``state.fail_next``); the next request gets
it instead of the normal answer. ``state.requests`` records every request the fake saw.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import RequestResponseEndpoint


@dataclass
class Scripted:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class FakeState:
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_next: list[Scripted] = field(default_factory=list)
    # Scripted answers by request number (1-based), for a failure in the middle of a run.
    fail_on: dict[int, Scripted] = field(default_factory=dict)
    # Seconds every request waits before its answer (a slow provider).
    delay_s: float = 0.0

    def seen(self, path_prefix: str = "") -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].startswith(path_prefix)]


def install_recorder(app: FastAPI, state: FakeState) -> None:
    """Log each request and serve queued failures before the real handler runs."""

    @app.middleware("http")
    async def _record(request: Request, call_next: RequestResponseEndpoint) -> Response:
        body = await request.body()
        state.requests.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": dict(request.query_params),
                "headers": dict(request.headers),
                "body": body.decode() if body else None,
            }
        )
        scripted = state.fail_on.pop(len(state.requests), None)
        if scripted is None and state.fail_next:
            scripted = state.fail_next.pop(0)
        if state.delay_s:
            await asyncio.sleep(state.delay_s)
        if scripted is not None:
            if scripted.delay_s:
                await asyncio.sleep(scripted.delay_s)
            if scripted.body is None:
                return Response(status_code=scripted.status, headers=scripted.headers)
            if isinstance(scripted.body, str):
                return Response(scripted.body, scripted.status, headers=scripted.headers)
            return JSONResponse(scripted.body, scripted.status, headers=scripted.headers)
        return await call_next(request)
