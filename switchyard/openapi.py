"""The OpenAPI document, telling what the service answers and how to call it.

FastAPI documents a 422 the service never sends (validation failures are 400 here) and none of
the errors routes raise. This rewrites each operation's error responses from what the
operation can meet: bad input (400), a token (401, 429), an id that may not exist (404),
a conflicting state (409), a body (413, 415), a provider behind it (405, 502, 504), and a
dependency that is down (503). 429 and 503 carry ``Retry-After``.

It also declares the API token (a bearer token the routes check themselves, so FastAPI cannot
see it) on the operations that need one, describes the tags, and names operations after their
route functions: Swagger UI can authorize, and generated clients read like the API. Links from
the operations that create or list a record to those that take its id are declared in
``switchyard/openapi_links.py``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from switchyard.openapi_links import add_links

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
SECURITY_SCHEME = "bearerAuth"
SECURITY_SCHEMES = {
    SECURITY_SCHEME: {
        "type": "http",
        "scheme": "bearer",
        "description": (
            "An API token (sy_…) of one environment, from `.venv/bin/switchyard tokens create "
            "--environment development`. Sent as `Authorization: Bearer <token>`."
        ),
    }
}
# app.py mounts every route that checks the API token under /v1, and nothing else there.
API_TOKEN_PREFIX = "/v1/"
TAG_DESCRIPTIONS = {
    "Inference": "Classify customer-support messages into intents.",
    "Installed integrations": (
        "The integration catalog, and the integrations installed in the token's environment."
    ),
    "Link tokens": "Single-use tokens that open the hosted connect page for one of your customers.",
    "Connect account": (
        "The hosted connect page's calls, authorized by the link token they carry (no API token)."
    ),
    "Integrated accounts": "Your customers' connected accounts.",
    "Unified WMS": "Orders, returns and products of any connected WMS, in one record shape.",
    "Unified CRM": "Contacts and companies of any connected CRM, in one record shape.",
    "Cached returns": "Returns copied by sync runs, read without calling the provider.",
    "Proxy": "The provider's own API, called with the account's stored credentials.",
    "Sync jobs": "Copy unified records of an account, on demand or on a cron schedule.",
    "Webhooks": "Event subscriptions, test events, the delivery log and replays.",
    "API log": "The unified and proxy calls made for your accounts.",
}
# Where serving/http.py puts the named schemas of a body its route parses itself.
COMPONENT_SCHEMAS_KEY = "x-component-schemas"
# Besides unified and proxy calls, what refuses an account whose integration is disabled.
USES_AN_ENABLED_INTEGRATION = {
    "/v1/link-token", "/v1/sync-job-run", "/connect-account/session",
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


def operation_id(route: APIRoute) -> str:
    """The route function's name (``list_installed_integrations``): what clients call the
    operation. Routes built per resource give theirs with ``operation_id=``."""
    return route.name


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, operation)
            for path, item in schema.get("paths", {}).items()
            for method, operation in item.items() if method in HTTP_METHODS]  # fmt: skip


def document_calling(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the API token required where the routes check it, the tags described
    (in the order above), and the schemas operations bring moved to the components."""
    components = schema.setdefault("components", {})
    components["securitySchemes"] = SECURITY_SCHEMES
    used: set[str] = set()
    for path, _method, operation in _operations(schema):
        components.setdefault("schemas", {}).update(operation.pop(COMPONENT_SCHEMAS_KEY, {}))
        if path.startswith(API_TOKEN_PREFIX):
            operation["security"] = [{SECURITY_SCHEME: []}]
        for response in operation.get("responses", {}).values():
            body = response.get("content", {}).get("application/json", {}).get("schema", {})
            # FastAPI's "Response List Sync Jobs": generators prefix it with the operation again.
            if str(body.get("title", "")).startswith("Response "):
                del body["title"]
        used.update(operation.get("tags", []))
    order = list(TAG_DESCRIPTIONS)
    schema["tags"] = [
        {"name": tag, "description": TAG_DESCRIPTIONS.get(tag, "")}
        for tag in sorted(used, key=lambda t: (order.index(t) if t in order else len(order), t))
    ]
    return schema


def install_openapi(app: FastAPI) -> None:
    """Serve the rewritten document at ``/openapi.json`` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
                servers=app.servers,
            )
            app.openapi_schema = add_links(document_errors(document_calling(document)))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
