"""503 SERVICE_UNAVAILABLE, with Retry-After, when the database or Redis cannot be reached.

A dependency that is down is not the caller's fault nor a defect of ours: the caller is told
to come back, in the error shape, instead of getting a 500.
"""

from __future__ import annotations

import logging

import redis
import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from core.errors import error_response
from core.request_context import get_request_id

log = logging.getLogger(__name__)

RETRY_AFTER_S = 5

# What a driver raises when it cannot reach its server (refused, reset, timed out, gone away).
DATABASE_DOWN = (sa.exc.OperationalError, sa.exc.InterfaceError)
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def install_unavailable_handlers(app: FastAPI) -> None:
    """Answer 503 for a database or Redis that cannot be reached."""

    def _unavailable(dependency: str, exc: Exception) -> JSONResponse:
        log.error("%s unavailable request_id=%s: %s", dependency, get_request_id(), exc)
        return error_response(
            503,
            "SERVICE_UNAVAILABLE",
            f"the {dependency} cannot be reached right now; retry shortly",
            {"Retry-After": str(RETRY_AFTER_S)},
        )

    async def database_down(_: Request, exc: Exception) -> JSONResponse:
        return _unavailable("database", exc)

    async def redis_down(_: Request, exc: Exception) -> JSONResponse:
        return _unavailable("cache and queue (Redis)", exc)

    for database_error in DATABASE_DOWN:
        app.add_exception_handler(database_error, database_down)
    for redis_error in REDIS_DOWN:
        app.add_exception_handler(redis_error, redis_down)
