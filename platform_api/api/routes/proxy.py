"""Proxy API: ``/proxy/{path}`` passes a call through to the account's provider."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from core.errors import invalid_request
from platform_api.api.deps import CurrentPrincipal, SettingsDep
from platform_api.services.unified import proxy_request
from platform_api.unified.proxy import RESERVED
from platform_api.unified.requests import ProxyRequest

router = APIRouter(prefix="/proxy", tags=["Proxy"])


async def proxy(
    request: Request,
    resource_path: str,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    integrated_account_id: Annotated[str, Query(description="The integrated account to call.")],
    limit: Annotated[int | None, Query(ge=1, le=500, description="Page size of lists.")] = None,
    next_cursor: Annotated[str | None, Query(description="Cursor from the previous page.")] = None,
) -> Response:
    body: Any = None
    if request.method in ("POST", "PUT", "PATCH"):
        raw = await request.body()
        if raw:
            try:
                body = await request.json()
                # JSON may carry lone surrogates ("\ud800") that no UTF-8 body can: refused
                # here rather than when the body is forwarded (a UnicodeEncodeError).
                json.dumps(body, ensure_ascii=False).encode()
            except ValueError as exc:
                raise invalid_request(
                    "request body is not valid JSON, or holds text no UTF-8 body can carry "
                    "(a lone surrogate such as \\ud800)"
                ) from exc
    query = {k: v for k, v in request.query_params.items() if k not in RESERVED}
    asked = ProxyRequest(
        environment_id=principal.environment_id,
        integrated_account_id=integrated_account_id,
        http_method=request.method,
        resource_path=resource_path,
        query=query,
        body=body,
        limit=limit,
        cursor=next_cursor,
    )
    result = await proxy_request(settings, asked)
    if result.body is None:
        return Response(status_code=result.status)
    return JSONResponse(result.body, status_code=result.status)


# One route per method, so each has its own OpenAPI operation.
for _method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
    router.add_api_route(
        "/{resource_path:path}",
        proxy,
        methods=[_method],
        operation_id=f"proxy_{_method.lower()}",
        summary=f"{_method} the provider's own API with the account's credentials",
        description=(
            "The path after /proxy/ is appended to the provider's base URL; query parameters "
            "other than integrated_account_id, limit and next_cursor, and the JSON body, are "
            "passed on. Provider lists come back in the page envelope {result, next_cursor}."
        ),
    )
