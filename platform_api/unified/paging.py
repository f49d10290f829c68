"""Provider pagination styles, and the opaque unified cursor that carries their state."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlparse

from platform_api.pagination import decode_cursor, encode_cursor
from platform_api.unified.expressions import compile_expression
from platform_api.unified.resource_map import Pagination
from platform_api.unified.upstream import UpstreamResponse


def link_next(header: str) -> str | None:
    """The ``rel="next"`` target of a Link header, in one pass (no backtracking regex: a
    hostile header cannot make this slower than linear)."""
    for link in header.split(","):
        target, _, params = link.partition(";")
        target = target.strip()
        if not (target.startswith("<") and target.endswith(">")):
            continue
        for param in params.split(";"):
            name, _, value = param.partition("=")
            rels = value.strip().strip('"').lower().split()
            if name.strip().lower() == "rel" and "next" in rels:
                return target[1:-1]
    return None


def request_params(pagination: Pagination | None, state: dict[str, Any], limit: int) -> dict:
    """Query parameters that ask the provider for the page described by ``state``."""
    if pagination is None or pagination.style == "none":
        return {}
    if pagination.style == "link_header" and "params" in state:
        # Shopify refuses filters beside page_info: the next link's query is the whole query.
        return dict(state["params"])
    params: dict[str, Any] = {}
    if pagination.limit_param:
        params[pagination.limit_param] = limit
    if pagination.style == "cursor" and pagination.cursor_param and state.get("cursor"):
        params[pagination.cursor_param] = state["cursor"]
    elif pagination.style == "page" and pagination.page_param:
        params[pagination.page_param] = state.get("page", pagination.first_page)
    elif pagination.style == "offset" and pagination.offset_param:
        params[pagination.offset_param] = state.get("offset", 0)
    return params


def next_state(
    pagination: Pagination | None, state: dict[str, Any], limit: int, response: UpstreamResponse
) -> dict[str, Any] | None:
    """The state of the following page, or None when the provider says there is none."""
    if pagination is None or pagination.style == "none":
        return None
    if pagination.style == "link_header":
        target = link_next(response.headers.get("link", ""))
        if not target:
            return None
        return {"params": dict(parse_qsl(urlparse(target).query))}
    if pagination.style == "page":
        page = state.get("page", pagination.first_page)
        bindings = {"page": page, "limit": limit}
        if not _over_response(pagination.has_more or "false", response, bindings):
            return None
        return {"page": page + 1}
    value = _over_response(pagination.next or "null", response, {"limit": limit, **state})
    if value in (None, "", False):
        return None
    key = "cursor" if pagination.style == "cursor" else "offset"
    return {key: value}


def _over_response(source: str, response: UpstreamResponse, bindings: dict[str, Any]) -> Any:
    """``source`` over ``{"body": …, "headers": …}``: the document the Rust engine parsed for
    a page it mapped, else the body parsed in Python."""
    expression = compile_expression(source)
    if response.document is not None and expression.engine == "jsonatapy":
        return expression.evaluate_document(response.document, bindings)
    return expression.evaluate({"body": response.body, "headers": response.headers}, bindings)


def encode_state(state: dict[str, Any], limit: int, scope: str, key: bytes) -> str:
    # The limit travels with the state: page numbers only mean something at a fixed size.
    return encode_cursor({"state": state, "limit": limit}, scope, key)


def decode_state(cursor: str | None, scope: str, key: bytes) -> tuple[dict[str, Any], int | None]:
    if not cursor:
        return {}, None
    data = decode_cursor(cursor, scope, key)
    return dict(data.get("state") or {}), data.get("limit")
