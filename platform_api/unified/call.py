"""The state of one unified request as it moves through the pipeline, and provider calls."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from core.settings import Settings
from platform_api.integrations.catalog import IntegrationManifest
from platform_api.integrations.connection import AuthParts
from platform_api.unified import upstream
from platform_api.unified.errors import to_api_error
from platform_api.unified.resource_map import MethodSpec, ResourceMap, ResourceSpec, UpstreamRequest

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_.]*)\}", re.IGNORECASE)


@dataclass
class Connection:
    """Where and how an account reaches its provider."""

    account_id: str
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
    """One unified request; each pipeline step reads and fills its fields."""

    settings: Settings
    connection: Connection
    category: str
    resource: str
    method: str
    record_id: str | None = None
    query: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    limit: int = 50
    cursor: str | None = None
    skip_api_call: bool = False
    # A custom method's name; ``method`` is then the method it runs like (list or get).
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
    next_state: dict[str, Any] | None = None
    result: Any = None
    upstream_statuses: list[int] = field(default_factory=list)

    @property
    def scope(self) -> str:
        filters = ",".join(f"{k}={self.query[k]}" for k in sorted(self.query))
        resource = f"{self.category}/{self.resource}" + (
            f":{self.custom_method}" if self.custom_method else ""
        )
        return f"unified:{self.connection.account_id}:{resource}:{filters}"

    def bindings(self, **extra: Any) -> dict[str, Any]:
        """The ``$variables`` every manifest expression can use."""
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


def render_path(template: str, call: UnifiedCall, *, url_quote: bool = True) -> str:
    """Fill ``{id}``, ``{query.x}``, ``{context.x}`` and ``{steps.x}``, URL-quoted."""
    values = {"id": call.record_id, "query": call.query, "context": call.connection.context}
    values["steps"] = call.steps

    def fill(match: re.Match[str]) -> str:
        value: Any = values
        for part in match.group(1).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        text = str(value if value is not None else "")
        return quote(text, safe="") if url_quote else text

    return _PLACEHOLDER.sub(fill, template)


async def send_request(
    call: UnifiedCall,
    request: UpstreamRequest,
    *,
    params: dict[str, Any] | None = None,
    body: Any = None,
    raise_for_status: bool = True,
) -> upstream.UpstreamResponse:
    """Call the provider with the account's credentials; failures become unified errors."""
    conn = call.connection
    url = conn.base_url + render_path(request.path, call)
    # Header templates take the same placeholders as paths (e.g. ShipBob's channel id, found
    # by a fetch step).
    extra = {k: render_path(v, call, url_quote=False) for k, v in request.headers.items()}
    headers = {"Accept": "application/json", **extra, **conn.auth.headers}
    if conn.auth.basic:
        token = base64.b64encode(":".join(conn.auth.basic).encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    response = await upstream.send(
        call.settings,
        method=request.method,
        url=url,
        params={**(params or {}), **conn.auth.query},
        headers=headers,
        json=body,
        retry_after_header=conn.resources.rate_limit.retry_after_header,
    )
    call.upstream_statuses.append(response.status)
    if raise_for_status and not response.ok:
        mappings = [call.spec.errors if call.spec else None, conn.resources.errors]
        raise to_api_error(response, mappings)
    return response
