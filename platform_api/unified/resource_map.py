"""Resource maps: ``integrations/providers/<name>/resources.yaml``, loaded and checked.

(The integration's identity and auth are its integration file, ``integration.yaml``:
``integrations.catalog``.) A resource map declares, per unified resource and method, how to
call the provider (method and path template), how to map the query, body and response
(JSONata), how the provider paginates, how its errors read, optional static data,
before/after steps, and mock data for ``skip_api_call``. The engine (``engine.py``) runs every
resource map the same way.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from platform_api.integrations.catalog import PROVIDERS_DIR
from platform_api.integrations.catalog import get_manifest as get_integration
from platform_api.unified.expressions import compile_expression


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check(source: str | None) -> str | None:
    if source is not None:
        compile_expression(source)
    return source


class UpstreamRequest(_Strict):
    """The provider call: HTTP method and a path template (``{id}``, ``{context.x}``)."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    path: str
    headers: dict[str, str] = Field(default_factory=dict)


class Pagination(_Strict):
    """How the provider pages a list, and where the engine finds the next page.

    ``cursor``: ``next`` (JSONata over ``{body, headers}``) yields the provider's cursor, sent
    back as ``cursor_param`` (or used by the body mapping as ``$cursor``). ``page``: page numbers
    in ``page_param``; ``has_more`` decides whether another page exists. ``offset``: ``next``
    yields the next offset, sent as ``offset_param``. ``link_header``: the ``Link: rel="next"``
    URL's query replaces the whole query of the next call (Shopify's ``page_info``).
    """

    style: Literal["cursor", "page", "offset", "link_header", "none"]
    limit_param: str | None = None
    max_limit: int = 100
    cursor_param: str | None = None
    page_param: str | None = None
    first_page: int = 1
    offset_param: str | None = None
    next: str | None = None
    has_more: str | None = None

    _v = field_validator("next", "has_more")(_check)

    @model_validator(mode="after")
    def _complete(self) -> Pagination:
        needs = {
            "cursor": ("next",),
            "page": ("page_param", "has_more"),
            "offset": ("offset_param", "next"),
        }.get(self.style, ())
        missing = [name for name in needs if getattr(self, name) is None]
        if missing:
            raise ValueError(f"pagination style {self.style} needs {', '.join(missing)}")
        return self


class Step(_Strict):
    """A named before/after step; the engine implements each ``type`` once (``steps.py``)."""

    type: Literal["fetch", "validate", "transform", "filter", "log"]
    name: str | None = None
    # fetch
    request: UpstreamRequest | None = None
    query: str | None = None
    result: str | None = None
    # validate: `assert` must be truthy, else 400 with `message`
    assert_: str | None = Field(default=None, alias="assert")
    message: str | None = None
    # transform: JSONata returning the new query (before) or the new record (after)
    expression: str | None = None
    # filter (after): keep a record only when `keep` holds for it
    keep: str | None = None
    # log: JSONata producing the fields of an analytics log line
    fields: str | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    _v = field_validator("query", "result", "assert_", "expression", "keep", "fields")(_check)

    @model_validator(mode="after")
    def _complete(self) -> Step:
        needs = {
            "fetch": ("name", "request", "result"),
            "validate": ("assert_", "message"),
            "transform": ("expression",),
            "filter": ("keep",),
            "log": ("name", "fields"),
        }[self.type]
        missing = [name.rstrip("_") for name in needs if getattr(self, name) is None]
        if missing:
            raise ValueError(f"{self.type} step needs {', '.join(missing)}")
        return self


class StaticMapping(_Strict):
    """Predefined data returned without calling the provider (when ``when`` holds, or always)."""

    when: str | None = None
    result: Any

    _v = field_validator("when")(_check)


class ErrorMapping(_Strict):
    """How to read the provider's error body, and status overrides (provider → unified)."""

    message: str | None = None
    status: dict[int, int] = Field(default_factory=dict)

    _v = field_validator("message")(_check)


class MethodSpec(_Strict):
    request: UpstreamRequest | None = None
    query: str | None = None
    body: str | None = None
    records: str | None = None
    result: str | None = None
    pagination: Pagination | None = None
    static: StaticMapping | None = None
    before: list[Step] = Field(default_factory=list)
    after: list[Step] = Field(default_factory=list)
    errors: ErrorMapping | None = None
    success_status: list[int] = Field(default_factory=lambda: [200, 201, 204])

    _v = field_validator("query", "body", "records", "result")(_check)

    @model_validator(mode="after")
    def _complete(self) -> MethodSpec:
        if self.request is None and self.static is None:
            raise ValueError("a method needs a request or a static mapping")
        return self


BASE_METHODS = ("list", "get", "create", "update", "delete")
CustomName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]


class CustomMethodSpec(MethodSpec):
    """A read method of the provider's beyond list and get (say, only the open returns), run
    like the method it names in ``like``; served at ``…/<resource>:<name>``
    (``…/<resource>/{id}:<name>`` when like get) and usable in sync jobs."""

    like: Literal["list", "get"]


class ResourceSpec(_Strict):
    record: str | None = None
    filters: list[str] = Field(default_factory=list)
    methods: dict[Literal["list", "get", "create", "update", "delete"], MethodSpec]
    custom: dict[CustomName, CustomMethodSpec] = Field(default_factory=dict)
    mock: list[dict[str, Any]] = Field(default_factory=list)

    _v = field_validator("record")(_check)

    @field_validator("custom")
    @classmethod
    def _not_a_base_method(cls, custom: dict[str, CustomMethodSpec]) -> dict[str, CustomMethodSpec]:
        taken = sorted(set(custom) & set(BASE_METHODS))
        if taken:
            raise ValueError(f"custom method names must not be {', '.join(taken)}")
        return custom

    def read_methods(self) -> list[str]:
        """What a sync job may read with: list and get when offered, then custom methods."""
        return [m for m in ("list", "get") if m in self.methods] + list(self.custom)

    def shape_of(self, method: str) -> str:
        """``list`` or ``get`` for a read method: how its answer reads."""
        custom = self.custom.get(method)
        return custom.like if custom is not None else method


class RateLimit(_Strict):
    retry_after_header: str = "Retry-After"


class ProxySpec(_Strict):
    """How the proxy API finds records in a provider list answer, and pages through it."""

    records: str
    pagination: Pagination

    _v = field_validator("records")(_check)


class ResourceMap(_Strict):
    """One provider's ``resources.yaml``."""

    errors: ErrorMapping = Field(default_factory=ErrorMapping)
    rate_limit: RateLimit = Field(default_factory=RateLimit)
    proxy: ProxySpec | None = None
    # Shared text (e.g. a GraphQL fragment), bound as `$definitions` in every expression.
    definitions: dict[str, Any] = Field(default_factory=dict)
    resources: dict[str, ResourceSpec]

    def method(self, resource: str, method: str) -> tuple[ResourceSpec, MethodSpec] | None:
        spec = self.resources.get(resource)
        if spec is None:
            return None
        found = spec.methods.get(method) or spec.custom.get(method)  # type: ignore[call-overload]
        return (spec, found) if found is not None else None


def load_resources(path: Path) -> ResourceMap:
    """Parse and check one ``resources.yaml`` (every expression compiles here, not on use)."""
    return ResourceMap.model_validate(yaml.safe_load(path.read_text()))


@lru_cache(maxsize=64)
def get_resources(name: str) -> ResourceMap | None:
    """The resource mappings of integration ``name`` (None: it declares none)."""
    integration = get_integration(name)
    if integration is None or not integration.resources:
        return None
    return ResourceMap.model_validate(integration.resources)


def all_resource_files() -> list[Path]:
    return sorted(PROVIDERS_DIR.glob("*/resources.yaml"))
