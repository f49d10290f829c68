"""The unified request pipeline: the ten steps of the contract, in order, one function each.

    receive → static mapping → before-steps → query mapping → body mapping → upstream call
    → error mapping → response mapping → after-steps → unified response

Every provider runs through this module; what differs between providers is data in their
``resources.yaml``, its resource map (see ``resource_map.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from core.errors import ApiError, invalid_request
from platform_api.pagination import cursor_key
from platform_api.unified import paging
from platform_api.unified.call import UnifiedCall, send_request
from platform_api.unified.errors import to_api_error
from platform_api.unified.expressions import evaluate, page_mapping, parse_document
from platform_api.unified.resource_map import CustomMethodSpec
from platform_api.unified.schemas import (
    INPUT_SCHEMAS,
    RECORD_SCHEMAS,
    enum_values,
    validate_records,
    validate_records_json,
)
from platform_api.unified.steps import run_step

# List pages are mapped from the provider's JSON text by the Rust engine when they can be (the
# parity tests switch this off to run the record-by-record path on the same fixtures).
PAGES_IN_RUST = True


async def run(call: UnifiedCall) -> Any:
    """Process one unified request; returns the page envelope, a record, or None (delete)."""
    receive(call)
    if check_static_mapping(call):
        return unified_response(call)
    await run_before_steps(call)
    map_query(call)
    map_body(call)
    await call_upstream(call)
    map_errors(call)
    map_response(call)
    await run_after_steps(call)
    return unified_response(call)


# 1 ------------------------------------------------------------------------------------------
def receive(call: UnifiedCall) -> None:
    """Find the resource map's method, check filters and body, open the cursor."""
    found = call.connection.resources.method(call.resource, call.method)
    integration = call.connection.integration.name
    if call.connection.integration.category != call.category or (
        found is None and call.resource not in call.connection.resources.resources
    ):
        raise ApiError(
            404,
            "NOT_FOUND",
            f"integration {integration} offers no unified resource {call.category}/{call.resource}",
        )
    if found is None:
        raise ApiError(
            405,
            "METHOD_NOT_ALLOWED",
            f"integration {integration} does not support {call.method} on "
            f"{call.category}/{call.resource}",
        )
    call.resource_spec, call.spec = found
    if isinstance(call.spec, CustomMethodSpec):
        call.custom_method, call.method = call.method, call.spec.like
    unknown = set(call.query) - set(call.resource_spec.filters)
    if unknown:
        allowed = ", ".join(call.resource_spec.filters) or "none"
        raise invalid_request(
            f"unknown filter {', '.join(sorted(unknown))} (filters of this resource: {allowed})"
        )
    # An enumerated filter takes its field's values, mock answers (skip_api_call) included.
    schema = RECORD_SCHEMAS.get((call.category, call.resource))
    for name, value in call.query.items():
        values = enum_values(schema, name) if schema is not None else []
        if values and value not in values:
            raise invalid_request(f"{name}: must be one of {', '.join(values)}")
    if call.method in ("create", "update"):
        _check_body(call)
    if call.method == "list":
        key = cursor_key(call.settings)
        state, limit = paging.decode_state(call.request.cursor, call.scope, key)
        call.page_state = state
        pagination = call.spec.pagination
        call.limit = min(limit or call.limit, pagination.max_limit if pagination else call.limit)


def _check_body(call: UnifiedCall) -> None:
    schema = INPUT_SCHEMAS.get((call.category, call.resource))
    if call.body is None:
        raise invalid_request("request body: a JSON object is required")
    if schema is None:
        return
    try:
        parsed = schema.model_validate(call.body)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "body"
        raise invalid_request(f"{field}: {first['msg']}") from exc
    # JSON mode: money goes to the provider as a number, not a Decimal. A null field is
    # left out, as if not sent: providers have no "clear this field" the mappings could use.
    call.body = parsed.model_dump(mode="json", exclude_unset=True, exclude_none=True)


# 2 ------------------------------------------------------------------------------------------
def check_static_mapping(call: UnifiedCall) -> bool:
    """Answer from predefined data when asked to (``skip_api_call``) or when the resource map
    says."""
    assert call.resource_spec is not None and call.spec is not None
    if call.request.skip_api_call:
        mock = call.resource_spec.mock
        if call.method == "list":
            call.records = [dict(r) for r in mock[: call.limit]]
        elif call.method == "delete":
            call.result = None
        else:
            call.records = [dict(mock[0]) if mock else {}]
            if call.record_id and call.records:
                call.records[0]["id"] = call.record_id
        return True
    static = call.spec.static
    if static is None:
        return False
    if static.when is not None and not evaluate(static.when, call.query, call.bindings()):
        return False
    result = static.result
    if isinstance(result, str):
        result = evaluate(result, call.query, call.bindings())
    call.records = list(result) if call.method == "list" else [result]
    return True


# 3 ------------------------------------------------------------------------------------------
async def run_before_steps(call: UnifiedCall) -> None:
    """Fetch extra data, validate parameters, transform query values (resource map order)."""
    assert call.spec is not None
    for step in call.spec.before:
        await run_step(step, call, phase="before")


# 4 ------------------------------------------------------------------------------------------
def map_query(call: UnifiedCall) -> None:
    """Unified query → provider query, plus the provider's paging parameters."""
    assert call.spec is not None
    mapped = evaluate(call.spec.query, call.query, call.bindings()) if call.spec.query else {}
    query = {k: v for k, v in dict(mapped or {}).items() if v is not None}
    if call.method == "list":
        paging_params = paging.request_params(call.spec.pagination, call.page_state, call.limit)
        if (
            call.spec.pagination
            and call.spec.pagination.style == "link_header"
            and ("params" in call.page_state)
        ):
            query = paging_params
        else:
            query.update(paging_params)
    call.upstream_query = query


# 5 ------------------------------------------------------------------------------------------
def map_body(call: UnifiedCall) -> None:
    """Unified body → provider body (create/update, or a query language such as GraphQL)."""
    assert call.spec is not None
    if call.spec.body is not None:
        call.upstream_body = evaluate(call.spec.body, call.body or {}, call.bindings())


# 6 ------------------------------------------------------------------------------------------
async def call_upstream(call: UnifiedCall) -> None:
    """The provider call (429s are retried inside; transport failures raise 502/504)."""
    assert call.spec is not None and call.spec.request is not None
    call.response = await send_request(
        call,
        call.spec.request,
        params=call.upstream_query,
        body=call.upstream_body,
        raise_for_status=False,
    )


# 7 ------------------------------------------------------------------------------------------
def map_errors(call: UnifiedCall) -> None:
    """A provider failure becomes the standard error body with a fitting status."""
    assert call.response is not None and call.spec is not None
    response = call.response
    if response.ok and response.status in call.spec.success_status:
        if not response.graphql_errors():
            return
        response.status = 400
    raise to_api_error(response, [call.spec.errors, call.connection.resources.errors])


# 8 ------------------------------------------------------------------------------------------
def map_response(call: UnifiedCall) -> None:
    """Provider records → unified records, and the provider's next-page state."""
    assert call.response is not None and call.spec is not None
    if call.method == "delete":
        call.result = None
        return
    spec, bindings = call.spec, call.bindings()
    bindings["headers"] = call.response.headers
    if call.method == "list":
        if not _map_page_in_rust(call, bindings):
            body = call.response.body
            raw = evaluate(spec.records, body, bindings) if spec.records else body
            raw = [] if raw is None else raw if isinstance(raw, list) else [raw]
            call.records = _map_records(call, raw, bindings)
        call.next_state = paging.next_state(
            spec.pagination, call.page_state, call.limit, call.response
        )
        return
    body = call.response.body
    one = evaluate(spec.result, body, bindings) if spec.result else body
    if one is None:
        raise ApiError(404, "NOT_FOUND", f"no such {call.resource} record")
    call.records = _map_records(call, [one], bindings)


def _map_records(call: UnifiedCall, raw: list[Any], bindings: dict[str, Any]) -> list[Any]:
    record_mapping = call.resource_spec.record if call.resource_spec else None
    if not record_mapping:
        return raw
    return [evaluate(record_mapping, item, bindings) for item in raw]


def _map_page_in_rust(call: UnifiedCall, bindings: dict[str, Any]) -> bool:
    """A list page mapped from the provider's answer in one Rust evaluation (the answer parsed
    once, in Rust, for the records and the next-page state); False: map record by record.

    The records stay JSON text to the response, unless after-steps need them as Python
    objects: then they are parsed once from the mapped text, which costs less than the
    answer parsed in Python and each record converted into and out of the Rust engine."""
    assert call.response is not None and call.spec is not None
    record_mapping = call.resource_spec.record if call.resource_spec else None
    if not PAGES_IN_RUST or not record_mapping or not call.response.content:
        return False
    document = parse_document(call.response.document_text())
    if document is None:
        return False
    mapping = page_mapping(call.spec.records, record_mapping)
    mapped = mapping.evaluate_document_to_json(document, bindings)
    if mapped is None:
        return False
    if call.spec.after:
        call.records = json.loads(mapped)
    else:
        call.records_json = mapped
    call.response.document = document
    return True


# 9 ------------------------------------------------------------------------------------------
async def run_after_steps(call: UnifiedCall) -> None:
    """Enrich with further calls, transform records, log analytics (resource map order)."""
    assert call.spec is not None
    for step in call.spec.after:
        await run_step(step, call, phase="after")


# 10 -----------------------------------------------------------------------------------------
def unified_response(call: UnifiedCall) -> Any:
    """Records checked against the unified schema; lists in the page envelope."""
    if call.method == "delete":
        return None
    try:
        if call.records_json is not None:
            checked = validate_records_json(call.category, call.resource, call.records_json)
        else:
            records = validate_records(call.category, call.resource, call.records)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ApiError(
            502,
            "MAPPING_ERROR",
            f"the integration's data does not fit the unified {call.resource} schema: "
            f"{first['loc'][1:] or first['loc']} {first['msg']}",
        ) from exc
    if call.method != "list":
        return records[0]
    next_cursor = (
        paging.encode_state(call.next_state, call.limit, call.scope, cursor_key(call.settings))
        if call.next_state
        else None
    )
    if call.records_json is not None:
        return JsonPage(records_json=checked, next_cursor=next_cursor)
    return {"result": records, "next_cursor": next_cursor}


@dataclass(frozen=True)
class JsonPage:
    """A page whose records stayed JSON text from the provider's answer to the response:
    ``records_json`` is the checked records array as the API sends it."""

    records_json: bytes
    next_cursor: str | None

    def to_json(self) -> bytes:
        return (
            b'{"result":'
            + self.records_json
            + b',"next_cursor":'
            + to_json(self.next_cursor)
            + b"}"
        )

    def as_python(self) -> dict[str, Any]:
        return {"result": json.loads(self.records_json), "next_cursor": self.next_cursor}


def as_python(result: Any) -> Any:
    """An engine result as plain Python values (a ``JsonPage`` parsed)."""
    return result.as_python() if isinstance(result, JsonPage) else result
