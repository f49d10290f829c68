"""Provider errors turned into the standard error body (step 7 of the pipeline)."""

from __future__ import annotations

from typing import Any

from core.errors import ApiError
from platform_api.unified.expressions import evaluate
from platform_api.unified.resource_map import ErrorMapping
from platform_api.unified.upstream import UpstreamResponse


class IntegrationUnauthorized(ApiError):
    """The provider refused the account's credentials: the account needs re-authorization."""

    def __init__(self, message: str) -> None:
        super().__init__(401, "INTEGRATION_UNAUTHORIZED", message)


def provider_message(mappings: list[ErrorMapping | None], body: Any) -> str | None:
    """The provider's own error message, read with the first mapping that finds one."""
    for mapping in mappings:
        if mapping is None or mapping.message is None:
            continue
        try:
            message = evaluate(mapping.message, body if body is not None else {})
        except ApiError:
            continue
        if message:
            return message if isinstance(message, str) else str(message)
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return None


def to_api_error(response: UpstreamResponse, mappings: list[ErrorMapping | None]) -> ApiError:
    """The unified error for a failed provider response."""
    status = response.status
    for mapping in mappings:
        if mapping is not None and status in mapping.status:
            status = mapping.status[status]
            break
    message = provider_message(mappings, response.body)
    said = f": {message}" if message else ""
    if status == 401:
        return IntegrationUnauthorized(
            f"the integration rejected the account's credentials{said}; reconnect the account"
        )
    if status == 403:
        # Forbidden for this resource (a scope, a permission), not an expired token: passed on
        # without a refresh or a needs_reauth flag. An integration whose provider answers 403
        # for a dead token maps it to 401 (resources.yaml: `errors: {status: {403: 401}}`).
        refused = message or "the integration does not let this account do that"
        return ApiError(403, "INTEGRATION_FORBIDDEN", refused)
    if status in (400, 422):
        return ApiError(400, "INVALID_REQUEST", message or "the integration refused the request")
    if status == 404:
        return ApiError(404, "NOT_FOUND", message or "the integration has no such record")
    if status == 409:
        return ApiError(409, "CONFLICT", message or "the integration reported a conflict")
    if status == 429:
        return ApiError(429, "RATE_LIMITED", "the integration is rate limiting this account")
    if status >= 500:
        return ApiError(502, "UPSTREAM_ERROR", f"the integration failed (HTTP {status}){said}")
    return ApiError(
        502, "UPSTREAM_ERROR", f"unexpected answer from the integration (HTTP {status}){said}"
    )
