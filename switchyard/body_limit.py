"""Request bodies are bounded before anything parses them or authenticates the caller.

A pure ASGI middleware: it counts bytes as they arrive (so a chunked body without
Content-Length is bounded too), answers 413 past ``max_request_body_bytes`` without reading
further, refuses JSON nested deeper than ``max_json_depth`` with 400 (Python's parser would
otherwise recurse until ``RecursionError``), and hands the app the buffered body.

The depth is checked on the text the JSON parser would read: ``json.loads`` accepts bytes in
UTF-8 (with or without a byte order mark), UTF-16 and UTF-32, telling them apart by their
first bytes, so the body is decoded the same way before it is scanned.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import numpy as np
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.errors import error_response

# What each byte does to the nesting depth outside strings: +1 opens, -1 closes.
_DEPTH_STEP = np.zeros(256, dtype=np.int8)
_DEPTH_STEP[[ord("["), ord("{")]] = 1
_DEPTH_STEP[[ord("]"), ord("}")]] = -1
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def json_depth_exceeds(body: bytes, limit: int) -> bool:
    """Whether a JSON text nests deeper than ``limit`` (brackets inside strings ignored).

    Runs before authentication on bodies up to the size limit, so its cost must not depend on
    the nesting: a running sum over the bytes (numpy, one pass each), about 6 ms per MiB
    whatever the shape (``benchmarks/bench_body_scan.py``)."""
    # Cheap first: a body with few brackets cannot be deep.
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    text = np.frombuffer(body, dtype=np.uint8)
    steps = _DEPTH_STEP[text]
    quotes = text == _QUOTE
    if body.find(b"\\") >= 0:
        quotes &= ~_escaped(text)
    if quotes.any():
        # Inside a string after an odd number of (unescaped) quotes: brackets there count 0.
        steps[np.cumsum(quotes, dtype=np.int32) & 1 == 1] = 0
    return int(np.cumsum(steps, dtype=np.int32).max()) > limit


def _escaped(text: np.ndarray) -> np.ndarray:
    """Per byte, whether an odd run of backslashes ends right before it (an escape)."""
    backslash = np.zeros(text.size + 2, dtype=bool)
    backslash[1:-1] = text == _BACKSLASH
    # Where a run of backslashes starts, then the byte after it ends, alternately.
    edges = np.flatnonzero(backslash[1:] != backslash[:-1])
    starts, ends = edges[0::2], edges[1::2]
    escaped = np.zeros(text.size + 1, dtype=bool)
    escaped[ends[(ends - starts) & 1 == 1]] = True
    return escaped[:-1]


def _parsed_text(body: bytes) -> bytes | None:
    """The body as the UTF-8 text ``json.loads`` would parse (its encoding detected the same
    way, the byte order mark dropped); None when it does not decode, so no parser takes it."""
    encoding = json.detect_encoding(body)
    if encoding == "utf-8":
        return body  # nearly every body: scanned as it is (no UTF-8 sequence holds a bracket)
    try:
        return body.decode(encoding, "surrogatepass").encode("utf-8", "surrogatepass")
    except UnicodeError:
        return None


def _looks_like_json(text: bytes) -> bool:
    return text.lstrip()[:1] in (b"{", b"[")


def json_body_too_deep(body: bytes, limit: int) -> bool:
    """Whether the JSON parser would read this body as a text nested deeper than ``limit``."""
    text = _parsed_text(body)
    return text is not None and _looks_like_json(text) and json_depth_exceeds(text, limit)


# A check of the request's headers before its body is read: a response refuses it.
BeforeBody = Callable[[Scope], Awaitable[Response | None]]


class BodyLimitMiddleware:
    """413 for a body over ``max_bytes``; 400 for JSON deeper than ``max_json_depth``; the
    response of ``before_body`` (credentials, say) when it refuses, without reading the body."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        max_json_depth: int,
        before_body: BeforeBody | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_json_depth = max_json_depth
        self.before_body = before_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await self._refuse(scope, receive, send, 400, "malformed Content-Length")
                    return
                if declared > self.max_bytes:
                    await self._too_large(scope, receive, send)
                    return
        if self.before_body is not None and (refusal := await self.before_body(scope)):
            # The body is not read: close the connection rather than reuse it.
            refusal.headers["connection"] = "close"
            await refusal(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        pending: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                pending = message  # a disconnect: the app sees it after the body
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body and json_body_too_deep(body, self.max_json_depth):
            reason = f"request body nests deeper than {self.max_json_depth} levels"
            await self._refuse(scope, receive, send, 400, reason)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed, pending
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            if pending is not None:
                message, pending = pending, None
                return message
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"request body is larger than {self.max_bytes} bytes"
        response = error_response(413, "PAYLOAD_TOO_LARGE", message)
        # The rest of the body is not read: close the connection rather than reuse it.
        response.headers["connection"] = "close"
        await response(scope, receive, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, message: str
    ) -> None:
        await error_response(status, "INVALID_REQUEST", message)(scope, receive, send)
