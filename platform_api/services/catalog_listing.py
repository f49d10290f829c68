"""``GET /v1/integration``: the catalog as a paginated list (it lives in files, not tables)."""

from __future__ import annotations

from typing import Any

from core.errors import invalid_request
from platform_api.integrations.catalog import IntegrationManifest, get_catalog
from platform_api.pagination import PageParams, decode_cursor, encode_cursor

_SCOPE = "integration:{category}"


def serialize_integration(manifest: IntegrationManifest) -> dict[str, Any]:
    """A catalog entry: identity and the auth scheme (never any mapping internals)."""
    return {
        **manifest.summary,
        "auth_scheme": manifest.auth.scheme,
        "supports_oauth2": manifest.auth.oauth2 is not None,
    }


def list_catalog(*, category: str | None, params: PageParams) -> dict[str, Any]:
    """Catalog entries ordered by name, one page at a time (same cursors as every list)."""
    scope = _SCOPE.format(category=category)
    entries = sorted(get_catalog().values(), key=lambda m: m.name)
    if category is not None:
        entries = [m for m in entries if m.category == category]
    if params.next_cursor:
        after = decode_cursor(params.next_cursor, scope, params.cursor_key).get("after")
        if not isinstance(after, str):
            raise invalid_request("next_cursor: not a valid cursor")
        entries = [m for m in entries if m.name > after]
    page = entries[: params.limit]
    more = len(entries) > params.limit
    return {
        "result": [serialize_integration(m) for m in page],
        "next_cursor": encode_cursor({"after": page[-1].name}, scope, params.cursor_key)
        if more
        else None,
    }
