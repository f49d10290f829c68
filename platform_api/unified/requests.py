"""What a caller asks of an integrated account: one object from the route to the engine.

A route (or a sync run) builds a ``UnifiedRequest`` or a ``ProxyRequest`` once; the service
looks up the account's connection and logs the call, the engine (or the proxy) runs it. The
request is never changed on the way: what the pipeline derives lives on ``UnifiedCall``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

UNIFIED_METHODS = ("list", "get", "create", "update", "delete")


@dataclass(frozen=True, kw_only=True)
class UnifiedRequest:
    """One call of ``/unified/<category>/<resource>`` (or one of its custom methods)."""

    environment_id: str
    integrated_account_id: str
    category: str
    resource: str
    # list, get, create, update, delete, or the name of a custom method of the resource.
    method: str
    record_id: str | None = None
    query: Mapping[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    limit: int = 50
    cursor: str | None = None
    skip_api_call: bool = False

    @property
    def http_method(self) -> str:
        return {"create": "POST", "update": "PATCH", "delete": "DELETE"}.get(self.method, "GET")

    @property
    def path(self) -> str:
        """The unified path the caller used (without ``/v1``), as the API log shows it."""
        path = f"/unified/{self.category}/{self.resource}"
        if self.record_id is not None:
            path += f"/{self.record_id}"
        return path if self.method in UNIFIED_METHODS else f"{path}:{self.method}"


@dataclass(frozen=True, kw_only=True)
class ProxyRequest:
    """One pass-through call of ``/proxy/<resource_path>`` to the account's provider."""

    environment_id: str
    integrated_account_id: str
    http_method: str
    resource_path: str
    query: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    # Paging is applied only when asked for: a single-record GET goes out as sent.
    limit: int | None = None
    cursor: str | None = None

    @property
    def path(self) -> str:
        return f"/proxy/{self.resource_path}"
