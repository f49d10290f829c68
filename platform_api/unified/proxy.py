"""The proxy API: a provider resource passed through with the account's credentials applied.

Lists are normalized to the page envelope when the resource map says where a provider list keeps
its records (``proxy.records``) and how it pages (``proxy.pagination``); anything else comes
back as the provider sent it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from core.settings import Settings
from platform_api.pagination import cursor_key
from platform_api.unified import paging
from platform_api.unified.call import ProviderConnection, send_to_provider
from platform_api.unified.expressions import evaluate
from platform_api.unified.requests import ProxyRequest

# Query parameters the proxy itself consumes; everything else goes to the provider.
RESERVED = {"integrated_account_id", "limit", "next_cursor"}


@dataclass
class ProxyResult:
    status: int
    body: Any


async def forward(
    settings: Settings,
    connection: ProviderConnection,
    request: ProxyRequest,
    *,
    statuses: list[int],
) -> ProxyResult:
    """Send the call; provider errors become unified errors, lists become page envelopes."""
    method, query, cursor = request.http_method, dict(request.query), request.cursor
    spec = connection.resources.proxy if method == "GET" else None
    params = dict(query)
    resource_path = request.resource_path
    scope = f"proxy:{connection.integrated_account_id}:{resource_path}:" + ",".join(
        f"{k}={query[k]}" for k in sorted(query)
    )
    state: dict[str, Any] = {}
    page_limit = request.limit or 50
    if spec is not None:
        state, cursor_limit = paging.decode_state(cursor, scope, cursor_key(settings))
        page_limit = min(cursor_limit or page_limit, spec.pagination.max_limit)
        # Paging parameters only when paging was asked for: a single-record GET stays as sent.
        if request.limit is not None or cursor:
            paging_params = paging.request_params(spec.pagination, state, page_limit)
            params = paging_params if "params" in state else {**params, **paging_params}
    # Path segments are the caller's; the template syntax must not be interpreted.
    # Characters a URL path cannot carry are percent-encoded (the provider then answers for
    # that path, usually 404), never sent raw.
    safe_path = quote(resource_path, safe="/:@!$&'()*+,;=-._~%")
    response = await send_to_provider(
        settings, connection, method=method, path="/" + safe_path, params=params,
        body=request.body, statuses=statuses, error_mappings=[connection.resources.errors],
    )  # fmt: skip
    if spec is None:
        return ProxyResult(status=response.status, body=response.body)
    records = evaluate(spec.records, response.body) if response.body is not None else None
    if not isinstance(records, list):
        return ProxyResult(status=response.status, body=response.body)
    following = paging.next_state(spec.pagination, state, page_limit, response)
    next_cursor = (
        paging.encode_state(following, page_limit, scope, cursor_key(settings))
        if following
        else None
    )
    return ProxyResult(status=200, body={"result": records, "next_cursor": next_cursor})
