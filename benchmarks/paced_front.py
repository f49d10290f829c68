"""Fronts with the model replaced by an in-process stand-in that takes the model's time.

The stand-in answers a call after ``SWITCHYARD_BENCH_MS_PER_MESSAGE`` per message, as the
shipped model does on one ONNX Runtime thread, and runs as many calls at once as the front
keeps under way (one per replica). Under the same clients a front then sees the request rate
and the groups it sees with the real model, with no Ray and no replica taking the cores, so
``bench_inference`` can split the front's CPU per request:

- ``bare_app``: uvicorn and a minimal ASGI app around the front's grouping queue: what any
  Python ASGI front costs at this request rate;
- ``service_app``: the service's own app (token check, rate limit, request ids, metrics,
  validation, rendering) around the same queue;
- the shipped front adds the deployment-handle call (the rest of its CPU).

    uvicorn benchmarks.paced_front:bare_app --factory      # or :service_app
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from fastapi import FastAPI
from prometheus_client import generate_latest
from starlette.types import Receive, Scope, Send

from core.settings import get_settings
from serving.client import ClassifierClient, ClientOptions
from serving.protocol import BatchResult, TextPair

LABELS = tuple(f"intent_{i}" for i in range(10))


class _Method:
    def __init__(self, run: Any) -> None:
        self.remote = run


class PacedModel:
    """Stands in for the deployment handle: ``classify.remote(pairs)`` answers uniform
    probabilities after the model's time for ``len(pairs)`` messages."""

    def __init__(
        self, ms_per_message: float, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ) -> None:
        self._s_per_message = ms_per_message / 1000
        self._sleep = sleep
        self.classify = _Method(self._classify)
        self.model_version = _Method(self._version)

    async def _classify(self, pairs: Sequence[TextPair]) -> BatchResult:
        await self._sleep(self._s_per_message * len(pairs))
        uniform = np.full((len(pairs), len(LABELS)), 1 / len(LABELS), dtype=np.float32)
        return BatchResult(uniform, LABELS, "paced", len(pairs))

    async def _version(self) -> str:
        return "paced"


def _client() -> ClassifierClient:
    settings = get_settings()
    pace = float(os.environ.get("SWITCHYARD_BENCH_MS_PER_MESSAGE", "10"))
    return ClassifierClient(ClientOptions.from_settings(settings), handle=PacedModel(pace))


def service_app() -> FastAPI:
    """The service's app, its classifier paced in-process (no Ray)."""
    from switchyard.app import create_app

    return create_app(get_settings(), classifier=_client())


def bare_app() -> Any:
    """A minimal ASGI app: read the body, queue the message, answer its intent as JSON."""
    client = _client()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if scope["method"] != "POST":  # readiness probes, and the metrics the bench reads
            text = generate_latest() if scope["path"] == "/metrics" else b"{}"
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": text})
            return
        (result,) = await client.classify([(json.loads(body)["message"], None)])
        best = int(result.probabilities[0].argmax())
        answer = {
            "intent": result.labels[best],
            "confidence": float(result.probabilities[0][best]),
            "model_version": result.model_version,
        }
        payload = json.dumps(answer).encode()
        length = str(len(payload)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", length)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return app
