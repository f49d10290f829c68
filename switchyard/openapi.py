"""The OpenAPI document, telling what the service answers: every error in the error shape.

FastAPI documents a 422 the service never sends (validation failures are 400 here) and none of
the errors routes raise. This rewrites each operation's error responses from what the
operation can meet: bad input (400), a token (401, 429), an id that may not exist (404),
a conflicting state (409), a body (413, 415), a provider behind it (405, 502, 504), and a
dependency that is down (503). 429 and 503 carry ``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_REF = {"$ref": "#/components/schemas/ErrorResponse"}
ERROR_SCHEMA = {
    "type": "object",
    "title": "ErrorResponse",
    "required": ["error", "message", "request_id"],
    "properties": {
        "error": {"type": "string", "description": "Error code, e.g. INVALID_REQUEST."},
        "message": {"type": "string", "description": "What went wrong, naming the field."},
        "request_id": {"type": "string", "description": "Quote it when asking for help."},
    },
}
RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "schema": {"type": "string"},
    }
}
DESCRIPTIONS = {
    400: "Invalid request: the message names the field.",
    401: "Missing, unknown, expired or revoked credentials.",
    403: "The account's integration is disabled in this environment.",
    404: "No such record in this environment (or no such endpoint).",
    405: "The account's integration does not offer this operation.",
    409: "The record's state does not allow it (see the message).",
    413: "The request body is too large or too deeply nested.",
    415: "The request body is not JSON.",
    429: "Rate limited (here or at the provider); retry after Retry-After.",
    502: "The provider answered with an error or an unreadable body.",
    503: "A dependency (database, Redis, the model, the provider) is unavailable.",
    504: "The provider did not answer in time.",
}
HTTP_METHODS = {"get", "post", "put", "patch", "delete"}
# Besides unified and proxy calls, what refuses an account whose integration is disabled.
USES_AN_ENABLED_INTEGRATION = {
    "/v1/link-token", "/v1/sync-job-run",
}  # fmt: skip
# Public routes: health checks answer without credentials.
UNAUTHENTICATED_PREFIXES = ("/healthz", "/readyz", "/metrics")


def _statuses(path: str, method: str, operation: dict[str, Any]) -> set[int]:
    params = operation.get("parameters", [])
    takes_input = bool(params) or "requestBody" in operation
    statuses = {503}
    if takes_input:
        statuses.add(400)
    if not path.startswith(UNAUTHENTICATED_PREFIXES):
        statuses |= {401, 429}
    names = {p.get("name") for p in params}
    # An id in the path, the query or the body may name nothing in this environment.
    if any(p.get("in") == "path" for p in params) or "integrated_account_id" in names:
        statuses.add(404)
    if "requestBody" in operation and path.startswith("/v1/") and "inference" not in path:
        statuses.add(404)
    if method in ("post", "put", "patch", "delete"):
        statuses.add(409)
    if "requestBody" in operation:
        statuses |= {413, 415}
    if path.startswith(("/v1/unified/", "/v1/proxy/")):
        statuses |= {403, 404, 405, 409, 502, 504}
    if path in USES_AN_ENABLED_INTEGRATION and method == "post":
        statuses.add(403)
    return statuses


def _error_response(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": DESCRIPTIONS[status],
        "content": {"application/json": {"schema": ERROR_REF}},
    }
    if status in (429, 503):
        response["headers"] = RETRY_AFTER
    return response


def document_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with FastAPI's 422 replaced by the errors each operation can answer."""
    schema.setdefault("components", {}).setdefault("schemas", {})["ErrorResponse"] = ERROR_SCHEMA
    for name in ("HTTPValidationError", "ValidationError"):
        schema["components"]["schemas"].pop(name, None)
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            responses = operation.setdefault("responses", {})
            if "HTTPValidationError" in str(responses.get("422", "")):
                del responses["422"]  # FastAPI's own; a route's documented 422 stays
            for status in sorted(_statuses(path, method, operation)):
                responses.setdefault(str(status), _error_response(status))
    return schema


def install_openapi(app: FastAPI) -> None:
    """Serve the rewritten document at ``/openapi.json`` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document_errors(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                    servers=app.servers,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
