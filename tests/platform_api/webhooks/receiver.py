"""A real HTTP receiver on loopback whose answers each test scripts.

Every request is recorded (path, headers, raw body, arrival time) before it is answered, so
tests can assert on exactly what arrived even when the answer is a hang or an error.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request, Response


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    hang_seconds: float = 0.0
    body: str = ""


def ok() -> Answer:
    return Answer(200)


def status(code: int, body: str = "") -> Answer:
    return Answer(code, body=body)


def too_many(retry_after: str) -> Answer:
    return Answer(429, {"retry-after": retry_after})


def gone() -> Answer:
    return Answer(410)


def hang(seconds: float) -> Answer:
    return Answer(200, hang_seconds=seconds)


def redirect(location: str) -> Answer:
    return Answer(302, {"location": location})


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() on arrival
    client_port: int = 0  # the sender's end of the connection


class Receiver:
    """Scripted answers per hook name: consumed in order, the last one repeats."""

    def __init__(self) -> None:
        self._plans: dict[str, list[Answer]] = defaultdict(list)
        self._received: list[Received] = []
        self._lock = threading.Lock()
        self.base_url = ""
        self.app = self._build()

    def plan(self, name: str, *answers: Answer) -> str:
        """Script the answers of ``/hook/<name>``; returns its URL."""
        with self._lock:
            self._plans[name] = list(answers)
        return self.url(name)

    def url(self, name: str) -> str:
        return f"{self.base_url}/hook/{name}"

    def received(self, name: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self._received if name is None or r.path == f"/hook/{name}"]

    def wait_for(self, name: str, count: int = 1, timeout: float = 15.0) -> list[Received]:
        """Bounded wait until ``count`` requests reached ``/hook/<name>``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.received(name)
            if len(got) >= count:
                return got
            time.sleep(0.01)
        raise AssertionError(f"{name}: {len(self.received(name))} request(s), wanted {count}")

    def _next_answer(self, name: str) -> Answer:
        with self._lock:
            plan = self._plans.get(name) or [ok()]
            return plan.pop(0) if len(plan) > 1 else plan[0]

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.post("/hook/{name}")
        async def hook(name: str, request: Request) -> Response:
            body = await request.body()
            with self._lock:
                self._received.append(
                    Received(
                        request.url.path,
                        dict(request.headers),
                        body,
                        time.monotonic(),
                        request.client.port if request.client else 0,
                    )
                )
            answer = self._next_answer(name)
            if answer.hang_seconds:
                await asyncio.sleep(answer.hang_seconds)
            return Response(answer.body, status_code=answer.status, headers=answer.headers)

        @app.post("/elsewhere")
        async def elsewhere(request: Request) -> dict[str, Any]:
            with self._lock:
                self._received.append(
                    Received("/elsewhere", dict(request.headers), await request.body(), 0.0)
                )
            return {"ok": True}

        return app
