"""Liveness, readiness and metrics: outside /v1.

In production mode (``SWITCHYARD_MODE=production``) /metrics needs the metrics token (404
while none is set), and /readyz tells anonymous callers only its status: the checks and their
causes go to callers with an API token or the metrics token. Development mode answers both to
anyone (with the metrics token checked when one is set).
"""

from __future__ import annotations

import asyncio
import hmac

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from core.errors import ApiError
from core.settings import Settings
from platform_api.api.deps import (
    bearer_secret,
    count_failed_check,
    optional_principal,
    refuse_throttled_caller,
)
from platform_api.db import get_engine

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


def _database_ok(request: Request) -> bool:
    try:
        with get_engine(request.app.state.settings).connect() as connection:
            connection.execute(text("SELECT 1"))
        return True
    except Exception:  # noqa: BLE001 - any failure means not ready
        return False


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready to serve: model loaded, database and Redis reachable; ``causes`` says, in one
    line, why the model is not (a failed deployment names its error)."""
    checks: dict[str, bool] = {}
    checks["database"] = await asyncio.to_thread(_database_ok, request)
    try:
        checks["redis"] = bool(await request.app.state.aredis.ping())
    except Exception:  # noqa: BLE001
        checks["redis"] = False
    classifier = getattr(request.app.state, "classifier", None)
    causes: dict[str, str] = {}
    try:
        checks["model"] = bool(classifier is not None and await classifier.ready())
    except Exception as exc:  # noqa: BLE001
        checks["model"] = False
        causes["model"] = f"{type(exc).__name__}: {exc}"
    if not checks["model"]:
        reason = classifier.not_ready_reason if classifier is not None else None
        causes.setdefault("model", reason or "no classifier configured")
    ready = all(checks.values())
    body: dict[str, object] = {"status": "ready" if ready else "not_ready"}
    if await _may_see_detail(request):
        body["checks"] = checks
        if causes:
            body["causes"] = causes
    return JSONResponse(body, status_code=200 if ready else 503)


async def _may_see_detail(request: Request) -> bool:
    """Whether /readyz says which check failed and why: anyone in development mode; in
    production, callers with the metrics token or a valid API token."""
    settings: Settings = request.app.state.settings
    if settings.mode != "production":
        return True
    try:
        refuse_throttled_caller(request)
    except ApiError:
        return False  # past its failed checks: no token is believed from there
    if _has_metrics_token(request, settings):
        return True
    return await optional_principal(request, settings) is not None


def _has_metrics_token(request: Request, settings: Settings) -> bool:
    """``Authorization: Bearer <metrics_token>``, compared in constant time."""
    expected = settings.metrics_token
    given = bearer_secret(request.headers.get("authorization"))
    if not expected or given is None:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """Prometheus metrics; behind ``Authorization: Bearer <metrics_token>`` when that is set,
    and not served at all (404) in production mode while it is not. Wrong tokens count
    against the caller's address like wrong API tokens (production mode)."""
    settings: Settings = request.app.state.settings
    if not settings.metrics_token:
        if settings.mode == "production":
            raise ApiError(404, "NOT_FOUND", "metrics are not served: set the metrics token")
    else:
        refuse_throttled_caller(request)
        if not _has_metrics_token(request, settings):
            if bearer_secret(request.headers.get("authorization")) is not None:
                await count_failed_check(request)
            raise ApiError(
                401,
                "UNAUTHORIZED",
                "metrics need Authorization: Bearer <metrics token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
