"""Unified API: ``/unified/{category}/{resource}`` over every connected provider.

Routes are generated per unified resource (so the OpenAPI document shows each record schema)
and only for the methods some integration's resource map supports.
"""

# No `from __future__ import annotations`: route signatures use per-resource local types.

import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request, Response
from pydantic import BaseModel, create_model
from pydantic_core import to_json

from platform_api.api.deps import CurrentPrincipal, SettingsDep
from platform_api.integrations.catalog import get_catalog
from platform_api.pagination import PageParamsDep
from platform_api.services.unified import unified_request
from platform_api.unified.engine import JsonPage
from platform_api.unified.requests import UnifiedRequest
from platform_api.unified.resource_map import get_resources
from platform_api.unified.schemas import INPUT_SCHEMAS, RECORD_SCHEMAS, enum_values

router = APIRouter(prefix="/unified")

# Query parameters the unified API consumes; any other one is a resource filter.
RESERVED = {"integrated_account_id", "limit", "next_cursor", "skip_api_call"}

AccountId = Annotated[str, Query(description="The integrated account to call.")]
SkipApiCall = Annotated[
    bool, Query(description="true: return the resource's mock data; the provider is not called.")
]


def _supported() -> dict[tuple[str, str], dict[str, list[str]]]:
    """(category, resource) → method → filters, over every resource map in the catalog."""
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    for name, integration in get_catalog().items():
        resources = get_resources(name)
        if resources is None:
            continue
        for resource, spec in resources.resources.items():
            key = (integration.category, resource)
            # Custom methods as "<like>:<name>" (e.g. "list:awaiting_receipt").
            named = [*spec.methods, *(f"{c.like}:{n}" for n, c in spec.custom.items())]
            for method in named:
                filters = found.setdefault(key, {}).setdefault(method, [])
                filters.extend(f for f in spec.filters if f not in filters)
    return found


def _filter_schema(schema: type[BaseModel], name: str) -> dict[str, Any]:
    """A filter is a string; one named after an enumerated field takes that field's values."""
    values = enum_values(schema, name)
    return {"type": "string", "enum": values} if values else {"type": "string"}


def _tags(category: str) -> list[str]:
    return [f"Unified {category.upper()}"]


def _operation_names(category: str, resource: str) -> tuple[str, str]:
    """How operation ids name the resource: ``wms_returns`` for lists, ``wms_return`` for one
    record (after its schema: ``ReturnReason`` is ``return_reason``)."""
    record = re.sub(r"(?<!^)(?=[A-Z])", "_", RECORD_SCHEMAS[(category, resource)].__name__)
    return f"{category}_{resource}", f"{category}_{record.lower()}"


def _page_model(schema: type[BaseModel]) -> type[BaseModel]:
    # A page model per record schema, built at start-up: the schema is a value, not a type.
    return create_model(
        f"{schema.__name__}Page",
        result=(list[schema], ...),  # type: ignore[valid-type]
        next_cursor=(str | None, None),
    )


def _filters(request: Request) -> dict[str, Any]:
    return {k: v for k, v in request.query_params.items() if k not in RESERVED}


def _asking(category: str, resource: str, method: str) -> Callable[..., Awaitable[UnifiedRequest]]:
    """A dependency that reads one record's request (get, create, update, delete, or a
    custom method like get): who asks, which account, which record."""

    async def dependency(
        request: Request,
        principal: CurrentPrincipal,
        integrated_account_id: AccountId,
        skip_api_call: SkipApiCall = False,
    ) -> UnifiedRequest:
        return UnifiedRequest(
            environment_id=principal.environment_id,
            integrated_account_id=integrated_account_id,
            category=category,
            resource=resource,
            method=method,
            record_id=request.path_params.get("record_id"),
            skip_api_call=skip_api_call,
        )

    return dependency


def _listing(category: str, resource: str, method: str) -> Callable[..., Awaitable[UnifiedRequest]]:
    """A dependency that reads a list request (list, or a custom method like list): the
    record request's parts, then the filters and the page."""

    async def dependency(
        request: Request,
        asked: Annotated[UnifiedRequest, Depends(_asking(category, resource, method))],
        page: PageParamsDep,
    ) -> UnifiedRequest:
        return replace(asked, query=_filters(request), limit=page.limit, cursor=page.next_cursor)

    return dependency


def _add_routes(category: str, resource: str, methods: dict[str, list[str]]) -> None:
    schema = RECORD_SCHEMAS[(category, resource)]
    input_schema = INPUT_SCHEMAS.get((category, resource), dict[str, Any])
    base = f"/{category}/{resource}"
    common: dict[str, Any] = {"tags": _tags(category)}
    records, record = _operation_names(category, resource)

    # Custom methods first: ``/{record_id}`` would otherwise take ``rma_1:<name>``.
    for key in sorted(k for k in methods if ":" in k):
        _add_custom_route(category, resource, key, methods[key])

    if "list" in methods:
        filter_params = [
            {"name": f, "in": "query", "required": False, "schema": _filter_schema(schema, f)}
            for f in methods["list"]
        ]

        async def list_records(
            settings: SettingsDep,
            asked: Annotated[UnifiedRequest, Depends(_listing(category, resource, "list"))],
        ) -> Response:
            return _json(await unified_request(settings, asked), 200)

        router.add_api_route(
            base,
            list_records,
            methods=["GET"],
            response_model=_page_model(schema),
            summary=f"List {category}/{resource}",
            operation_id=f"list_{records}",
            openapi_extra={"parameters": filter_params} if filter_params else None,
            **common,
        )

    if "get" in methods:

        async def get_record(
            record_id: str,
            settings: SettingsDep,
            asked: Annotated[UnifiedRequest, Depends(_asking(category, resource, "get"))],
        ) -> Response:
            return _json(await unified_request(settings, asked), 200)

        router.add_api_route(
            base + "/{record_id}",
            get_record,
            methods=["GET"],
            response_model=schema,
            summary=f"Get one {category}/{resource} record",
            operation_id=f"get_{record}",
            **common,
        )

    if "create" in methods:

        async def create_record(
            settings: SettingsDep,
            asked: Annotated[UnifiedRequest, Depends(_asking(category, resource, "create"))],
            body: Annotated[input_schema, Body()],  # type: ignore[valid-type]  # built per resource
        ) -> Response:
            result = await unified_request(settings, replace(asked, body=_dump(body)))
            return _json(result, 201)

        router.add_api_route(
            base,
            create_record,
            methods=["POST"],
            status_code=201,
            response_model=schema,
            summary=f"Create a {category}/{resource} record",
            operation_id=f"create_{record}",
            **common,
        )

    if "update" in methods:

        async def update_record(
            record_id: str,
            settings: SettingsDep,
            asked: Annotated[UnifiedRequest, Depends(_asking(category, resource, "update"))],
            body: Annotated[input_schema, Body()],  # type: ignore[valid-type]  # built per resource
        ) -> Response:
            result = await unified_request(settings, replace(asked, body=_dump(body)))
            return _json(result, 200)

        router.add_api_route(
            base + "/{record_id}",
            update_record,
            methods=["PATCH"],
            response_model=schema,
            summary=f"Update a {category}/{resource} record",
            operation_id=f"update_{record}",
            **common,
        )

    if "delete" in methods:

        async def delete_record(
            record_id: str,
            settings: SettingsDep,
            asked: Annotated[UnifiedRequest, Depends(_asking(category, resource, "delete"))],
        ) -> Response:
            await unified_request(settings, asked)
            return Response(status_code=204)

        router.add_api_route(
            base + "/{record_id}",
            delete_record,
            methods=["DELETE"],
            status_code=204,
            response_class=Response,
            summary=f"Delete a {category}/{resource} record",
            operation_id=f"delete_{record}",
            **common,
        )


def _add_custom_route(category: str, resource: str, key: str, filters: list[str]) -> None:
    """``GET …/<resource>:<name>`` (like list) or ``GET …/<resource>/{record_id}:<name>``
    (like get): a provider's own read method, custom-method style (Google AIP-136)."""
    like, name = key.split(":")
    schema = RECORD_SCHEMAS[(category, resource)]
    records, record = _operation_names(category, resource)
    common: dict[str, Any] = {
        "tags": _tags(category),
        "methods": ["GET"],
        "summary": f"{name.replace('_', ' ').capitalize()} ({category}/{resource}, custom)",
        # list_wms_returns_awaiting_receipt, get_wms_return_<name>
        "operation_id": f"{like}_{records if like == 'list' else record}_{name}",
    }
    if like == "list":

        async def list_custom(
            settings: SettingsDep,
            asked: Annotated[UnifiedRequest, Depends(_listing(category, resource, name))],
        ) -> Response:
            return _json(await unified_request(settings, asked), 200)

        parameters = [{"name": f, "in": "query", "required": False,
                       "schema": _filter_schema(schema, f)} for f in filters]  # fmt: skip
        router.add_api_route(
            f"/{category}/{resource}:{name}", list_custom, response_model=_page_model(schema),
            openapi_extra={"parameters": parameters} if parameters else None, **common,
        )  # fmt: skip
    else:

        async def get_custom(
            record_id: str,
            settings: SettingsDep,
            asked: Annotated[UnifiedRequest, Depends(_asking(category, resource, name))],
        ) -> Response:
            return _json(await unified_request(settings, asked), 200)

        router.add_api_route(
            f"/{category}/{resource}/{{record_id}}:{name}", get_custom, response_model=schema,
            **common,
        )  # fmt: skip


def _json(content: Any, status_code: int) -> Response:
    # The engine has validated every record against its schema; returning the response
    # directly skips FastAPI validating the same records a second time. A page the Rust engine
    # mapped arrives as JSON already; anything else is written by pydantic-core (a third of the
    # json module's time for a page of records).
    body = content.to_json() if isinstance(content, JsonPage) else to_json(content)
    return Response(body, status_code=status_code, media_type="application/json")


def _dump(body: Any) -> dict[str, Any]:
    # Only the fields the caller sent: an update must not blank the others.
    return body.model_dump(exclude_unset=True) if isinstance(body, BaseModel) else dict(body)


for (_category, _resource), _methods in sorted(_supported().items()):
    if (_category, _resource) in RECORD_SCHEMAS:
        _add_routes(_category, _resource, _methods)
