"""400 INVALID_REQUEST for a value the database refuses to store or compare.

PostgreSQL text cannot hold a NUL character (psycopg refuses it before sending, ``jsonb``
refuses ``\\u0000``), and SQLite can: an id, filter or body string with one would otherwise
reach a 500 on PostgreSQL only. The driver's refusal (a DBAPI ``DataError``) is the caller's
input, so it is answered as such, naming no column and echoing no value.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from core.errors import error_response
from core.request_context import get_request_id

log = logging.getLogger(__name__)

NUL_MARKERS = ("NUL", "0x00", "\\u0000")


def refusal_message(exc: sa.exc.DataError) -> str:
    """What the caller is told: NUL characters named as such, anything else in general."""
    if any(marker in str(exc.orig) for marker in NUL_MARKERS):
        return "text values must not contain NUL (\\u0000) characters"
    return "a value in the request cannot be stored (out of range or malformed)"


def install_storage_error_handlers(app: FastAPI) -> None:
    """Answer 400 for a value the database refuses (``sqlalchemy.exc.DataError``)."""

    async def data_refused(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, sa.exc.DataError)
        log.warning("database refused a value request_id=%s: %s", get_request_id(), exc.orig)
        return error_response(400, "INVALID_REQUEST", refusal_message(exc))

    app.add_exception_handler(sa.exc.DataError, data_refused)
