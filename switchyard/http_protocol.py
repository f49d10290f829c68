"""uvicorn's HTTP protocol, answering a request it cannot parse in the error shape.

The HTTP parser refuses a request whose request line or headers are not HTTP/1.1 before the app
sees it: e.g. ``curl "$SY/v1/integrated-account?next_cursor=…"`` sends the ellipsis as raw UTF-8
bytes, and a request target may only hold visible ASCII (RFC 9112; httptools' llhttp: "Invalid
char in url query", h11 alike). uvicorn then writes a plain-text 400 "Invalid HTTP request
received." itself. The protocols here write that 400 as ``{"error": "INVALID_REQUEST",
"message": ..., "request_id": ...}`` with ``X-Request-ID``, naming the query parameter when the
request line shows which.

The front runs with ``uvicorn --http switchyard.http_protocol:HttpProtocol`` (``UVICORN_HTTP``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from urllib.parse import quote, unquote

import h11
import structlog
from uvicorn.protocols.http.h11_impl import H11Protocol

from core.errors import error_body
from core.request_context import accept_or_create

log = structlog.get_logger("switchyard.http")

UVICORN_HTTP = "switchyard.http_protocol:HttpProtocol"

GENERIC_MESSAGE = "not a valid HTTP/1.1 request: the request line or a header could not be parsed"
# A request line; its target may hold the bytes the parser refused (even a space).
_REQUEST_LINE = re.compile(rb"([A-Z]+) (.+) HTTP/\d\.\d")
# What both parsers accept in a request target: visible ASCII; anything else is percent-encoded.
_TARGET = re.compile(rb"[\x21-\x7e]*")
_REQUEST_ID = re.compile(rb"^x-request-id:[ \t]*([\x21-\x7e]+)[ \t]*\r?$", re.IGNORECASE | re.M)
_ECHO_MAX = 120  # a longer name or value is not echoed back in the message
# Kept of a chunk once parsed: the start of a request line that the next chunk completes. Only
# a tail, so an idle connection holds no large body.
_TAIL = 8192


def describe(data: bytes) -> str:
    """Why the request in ``data`` (what was read of it) is refused, naming the query parameter
    when its request line holds bytes no URL may hold unencoded."""
    for line in data.split(b"\n"):
        match = _REQUEST_LINE.fullmatch(line.rstrip(b"\r"))
        # Requests read before on the connection passed the parser: the first line with such
        # bytes is the refused request's.
        if match is None or _TARGET.fullmatch(match[2]):
            continue
        path, _, query = match[2].partition(b"?")
        query = query.partition(b"#")[0]
        for pair in query.split(b"&"):
            if _TARGET.fullmatch(pair):
                continue
            name, _, value = pair.partition(b"=")
            field = unquote(name.decode("utf-8", "replace"))[:_ECHO_MAX] or "query"
            message = (
                f"{field}: not a valid query value; characters outside visible ASCII must be "
                "percent-encoded as UTF-8"
            )
            encoded = quote(value, safe="%")
            if len(encoded) <= _ECHO_MAX and len(name) <= _ECHO_MAX:
                message += f" (send {quote(name, safe='%')}={encoded})"
            return message
        if not _TARGET.fullmatch(path):
            return (
                "the URL path has characters that must be percent-encoded as UTF-8 "
                "(only visible ASCII may be sent as is)"
            )
        return "the URL has characters that must be percent-encoded as UTF-8"
    return GENERIC_MESSAGE


def _incoming_request_id(data: bytes) -> str | None:
    match = _REQUEST_ID.search(data)
    return match[1].decode("ascii") if match else None


class _JsonErrors(asyncio.Protocol):
    """What the protocols add: the data being read, and the 400 body in the error shape."""

    _previous: bytes = b""  # the tail of the chunk read before
    _current: bytes = b""  # the chunk being parsed

    def _parse(self, data: bytes, parse: Callable[[bytes], None]) -> None:
        self._current = data
        try:
            parse(data)
        finally:
            self._previous, self._current = data[-_TAIL:], b""

    def _refusal(self) -> tuple[str, bytes]:
        """The request id and JSON body of the 400 for what was last read."""
        data = self._previous + self._current
        request_id = accept_or_create(_incoming_request_id(data))
        message = describe(data)
        # The app never saw the request: this is its only log line with the id.
        log.warning("invalid_http_request", request_id=request_id, message=message)
        body = error_body("INVALID_REQUEST", message, request_id)
        return request_id, json.dumps(body, separators=(",", ":")).encode()


try:
    import httptools  # noqa: F401  (uvicorn's choice when it is installed: "auto")
except ImportError:  # pragma: no cover
    _HAS_HTTPTOOLS = False
else:
    _HAS_HTTPTOOLS = True
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

    class JsonErrorsHttpToolsProtocol(_JsonErrors, HttpToolsProtocol):
        """uvicorn's httptools protocol; its 400 for an unparsable request in the error shape."""

        def data_received(self, data: bytes) -> None:
            self._parse(data, super().data_received)

        def send_400_response(self, msg: str) -> None:
            request_id, body = self._refusal()
            content = [STATUS_LINE[400]]
            for name, value in self.server_state.default_headers:
                content.extend([name, b": ", value, b"\r\n"])
            content.extend(
                [
                    b"content-type: application/json\r\n",
                    b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                    b"x-request-id: " + request_id.encode("ascii") + b"\r\n",
                    b"connection: close\r\n",
                    b"\r\n",
                    body,
                ]
            )
            self.transport.write(b"".join(content))
            self.transport.close()


class JsonErrorsH11Protocol(_JsonErrors, H11Protocol):
    """uvicorn's h11 protocol; its 400 for an unparsable request in the error shape."""

    def data_received(self, data: bytes) -> None:
        self._parse(data, super().data_received)

    def send_400_response(self, msg: str) -> None:
        request_id, body = self._refusal()
        headers = [
            *self.server_state.default_headers,
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"x-request-id", request_id.encode("ascii")),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()


# As uvicorn's "auto": httptools when installed (uvicorn[standard]), else h11.
HttpProtocol: type[asyncio.Protocol] = (
    JsonErrorsHttpToolsProtocol if _HAS_HTTPTOOLS else JsonErrorsH11Protocol
)
