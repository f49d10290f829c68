"""The one error shape every client sees: ``{error, message, request_id}``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.request_context import get_request_id

log = structlog.get_logger(__name__)


class ApiError(Exception):
    """An error with an HTTP status and a stable machine-readable code."""

    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def invalid_request(message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", message)


def not_found(what: str) -> ApiError:
    return ApiError(404, "NOT_FOUND", f"{what} not found")


def conflict(message: str) -> ApiError:
    return ApiError(409, "CONFLICT", message)


def error_body(code: str, message: str, request_id: str | None = None) -> dict[str, str]:
    """The error shape; ``request_id`` defaults to the current request's."""
    return {"error": code, "message": message, "request_id": request_id or get_request_id()}


def error_response(
    status_code: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    body = error_body(code, message)
    return JSONResponse(body, status_code=status_code, headers=dict(headers or {}))


def describe_validation_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """One readable sentence naming each offending field, e.g. ``message: Field required``."""
    parts = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path", "header")]
        field = ".".join(loc) if loc else "body"
        if err.get("type") == "json_invalid":
            parts.append("request body is not valid JSON")
            continue
        if err.get("type") == "missing":
            parts.append(f"{field}: field required")
            continue
        parts.append(f"{field}: {err.get('msg', 'invalid value')}")
    return "; ".join(dict.fromkeys(parts)) or "invalid request"


_STATUS_CODES = {
    400: "INVALID_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
    503: "SERVICE_UNAVAILABLE",
}


_HTTP_METHODS = ("delete", "get", "patch", "post", "put")


def _allowed_methods(request: Request) -> list[str] | None:
    """The methods the API document gives the path (None: not a documented path).

    Where a fixed path and a template both fit (``/v1/webhook/test`` and
    ``/v1/webhook/{webhook_id}``), the fixed one is the resource meant, as in the document."""
    path = request.scope.get("path", "")
    best: tuple[tuple[int, int], dict] | None = None
    for template, item in request.app.openapi().get("paths", {}).items():
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, path):
            rank = (template.count("{"), -len(template))
            if best is None or rank < best[0]:
                best = (rank, item)
    if best is None:
        return None
    return sorted(method.upper() for method in best[1] if method in _HTTP_METHODS)


def install_error_handlers(app: FastAPI) -> None:
    """Route every failure, expected or not, into the error shape."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status_code, exc.code, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, "INVALID_REQUEST", describe_validation_errors(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(
            exc.status_code, "INTERNAL_ERROR" if exc.status_code >= 500 else "ERROR"
        )
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404 and message == "Not Found":
            message = "no such endpoint"
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405 and (allowed := _allowed_methods(request)) is not None:
            # Starlette names the methods of the first route matching the path; a path served
            # by several routes (GET, PATCH, DELETE …) allows all of theirs.
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        return error_response(exc.status_code, code, message, headers)
