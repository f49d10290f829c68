"""The current request id, visible to every log line and error body of a request."""

from __future__ import annotations

import re
import secrets
from contextvars import ContextVar, Token

_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)

# Accept a caller's X-Request-ID only when it is short and plain, so logs stay clean.
_VALID_INCOMING = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


def new_request_id() -> str:
    """``req_`` and 32 random hex digits (a UUID object per request costs more, for nothing)."""
    return "req_" + secrets.token_hex(16)


def accept_or_create(incoming: str | None) -> str:
    """The caller's request id when it is well-formed, else a fresh one."""
    if incoming and _VALID_INCOMING.match(incoming):
        return incoming
    return new_request_id()


def set_request_id(request_id: str | None) -> Token[str | None]:
    return _request_id.set(request_id)


def reset_request_id(token: Token[str | None]) -> None:
    _request_id.reset(token)


def get_request_id() -> str:
    """The id of the request being handled (a fresh one outside a request)."""
    current = _request_id.get()
    return current if current is not None else new_request_id()
