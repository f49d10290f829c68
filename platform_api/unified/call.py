"""The state of one unified request as it moves through the pipeline, and provider calls."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from core.settings import Settings
from platform_api.integrations.catalog import IntegrationManifest
from platform_api.integrations.provider_access import AuthParts
from platform_api.unified import upstream
from platform_api.unified.errors import to_api_error
from platform_api.unified.requests import UnifiedRequest
from platform_api.unified.resource_map import (
    ErrorMapping,
    MethodSpec,
    ResourceMap,
    ResourceSpec,
    UpstreamRequest,
)

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_.]*)\}", re.IGNORECASE)


@dataclass
class ProviderConnection:
    """Where and how an integrated account reaches its provider."""

    environment_id: str
    integrated_account_id: str
    integration: IntegrationManifest
    resources: ResourceMap
    base_url: str
    auth: AuthParts
    context: dict[str, Any] = field(default_factory=dict)
    # OAuth accounts: the access token in use, when it expires, whether it can be refreshed.
    access_token: str | None = None
    expires_at: datetime | None = None
    refreshable: bool = False


@dataclass
class UnifiedCall:
    """One unified request on its way through the pipeline: the request as asked (never
    changed), the provider connection, and what each step derives from them."""

    settings: Settings
    connection: ProviderConnection
    request: UnifiedRequest
    # The method the resource map runs (a custom method runs like list or get), the filters (a
    # before-transform may rewrite them), the page size (capped by the provider) and the
    # body (checked against the input schema): working copies of the request's.
    method: str = ""
    query: dict[str, Any] = field(default_factory=dict)
    limit: int = 50
    body: dict[str, Any] | None = None
    custom_method: str | None = None
    # Filled by the pipeline.
    resource_spec: ResourceSpec | None = None
    spec: MethodSpec | None = None
    page_state: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)
    upstream_query: dict[str, Any] = field(default_factory=dict)
    upstream_body: Any = None
    response: upstream.UpstreamResponse | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    records_json: str | None = None  # a page the Rust engine mapped (see engine.map_response)
    next_state: dict[str, Any] | None = None
    result: Any = None
    upstream_statuses: list[int] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        settings: Settings,
        connection: ProviderConnection,
        request: UnifiedRequest,
        *,
        upstream_statuses: list[int] | None = None,
    ) -> UnifiedCall:
        return cls(
            settings=settings,
            connection=connection,
            request=request,
            method=request.method,
            query=dict(request.query),
            limit=request.limit,
            body=request.body,
            upstream_statuses=upstream_statuses if upstream_statuses is not None else [],
        )

    @property
    def category(self) -> str:
        return self.request.category

    @property
    def resource(self) -> str:
        return self.request.resource

    @property
    def record_id(self) -> str | None:
        return self.request.record_id

    @property
    def scope(self) -> str:
        """What a cursor of this listing is bound to: the account, resource and filters."""
        filters = ",".join(f"{k}={self.query[k]}" for k in sorted(self.query))
        resource = f"{self.category}/{self.resource}" + (
            f":{self.custom_method}" if self.custom_method else ""
        )
        return f"unified:{self.connection.integrated_account_id}:{resource}:{filters}"

    def bindings(self, **extra: Any) -> dict[str, Any]:
        """The ``$variables`` every resource map expression can use."""
        return {
            "query": self.query,
            "body": self.body,
            "id": self.record_id,
            "limit": self.limit,
            "cursor": self.page_state.get("cursor"),
            "page": self.page_state.get("page"),
            "offset": self.page_state.get("offset"),
            "steps": self.steps,
            "context": self.connection.context,
            "records": self.records,
            "definitions": self.connection.resources.definitions,
            **extra,
        }


def render_path(template: str, values: Mapping[str, Any], *, url_quote: bool = True) -> str:
    """Fill ``{id}``, ``{query.x}``, ``{context.x}`` and ``{steps.x}`` from ``values``,
    URL-quoted."""

    def fill(match: re.Match[str]) -> str:
        value: Any = values
        for part in match.group(1).split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        text = str(value if value is not None else "")
        return quote(text, safe="") if url_quote else text

    return _PLACEHOLDER.sub(fill, template)


async def send_to_provider(
    settings: Settings,
    connection: ProviderConnection,
    *,
    method: str,
    path: str,
    params: dict[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    statuses: list[int] | None = None,
    error_mappings: list[ErrorMapping | None] | None = None,
) -> upstream.UpstreamResponse:
    """Call ``path`` (already rendered) of the account's provider with its credentials.

    A provider failure raises the unified error when ``error_mappings`` is given (the
    mappings that read the provider's message); without it the answer is returned as is.
    """
    headers = {"Accept": "application/json", **(headers or {}), **connection.auth.headers}
    if connection.auth.basic:
        token = base64.b64encode(":".join(connection.auth.basic).encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    response = await upstream.send(
        settings,
        method=method,
        url=connection.base_url + path,
        params={**(params or {}), **connection.auth.query},
        headers=headers,
        json=body,
        retry_after_header=connection.resources.rate_limit.retry_after_header,
    )
    if statuses is not None:
        statuses.append(response.status)
    if error_mappings is not None and not response.ok:
        raise to_api_error(response, error_mappings)
    return response


async def send_request(
    call: UnifiedCall,
    request: UpstreamRequest,
    *,
    params: dict[str, Any] | None = None,
    body: Any = None,
    raise_for_status: bool = True,
) -> upstream.UpstreamResponse:
    """A resource map's provider request for ``call``; failures become unified errors."""
    values = {
        "id": call.record_id,
        "query": call.query,
        "context": call.connection.context,
        "steps": call.steps,
    }
    # Header templates take the same placeholders as paths (e.g. ShipBob's channel id, found
    # by a fetch step).
    headers = {k: render_path(v, values, url_quote=False) for k, v in request.headers.items()}
    mappings = [call.spec.errors if call.spec else None, call.connection.resources.errors]
    return await send_to_provider(
        call.settings,
        call.connection,
        method=request.method,
        path=render_path(request.path, values),
        params=params,
        headers=headers,
        body=body,
        statuses=call.upstream_statuses,
        error_mappings=mappings if raise_for_status else None,
    )
