"""The sandbox upstream's HTTP API (store: orders, returns, products; CRM: contacts, companies).

Its own conventions, unlike the unified API: ``Authorization: Bearer sk_sandbox_...``,
upper-case states, money in cents, ``{data, next_cursor}`` lists paged by ``cursor`` (the last
id seen), and errors shaped ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from platform_api.sandbox.data import (
    ORDER_STATES,
    REASON_CODES,
    RETURN_STATES,
    SandboxData,
    seed,
)
from platform_api.sandbox.oauth import OAuthServer

DEMO_KEY = "sk_sandbox_demo"
REVOKED_KEY = "sk_sandbox_revoked"
MAX_LIMIT = 200  # the unified API's own page maximum
# Any well-formed key is accepted (the sandbox has no accounts); the revoked one never is.
_KEY = re.compile(r"^sk_sandbox_[A-Za-z0-9]+$")


class SandboxError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        self.status, self.code, self.message = status, code, message


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _page(
    items: dict[str, dict[str, Any]],
    request: Request,
    keep: Callable[[dict[str, Any]], bool] = lambda r: True,
) -> dict[str, Any]:
    try:
        limit = int(request.query_params.get("limit", "20"))
    except ValueError as exc:
        raise SandboxError(400, "invalid_parameter", "limit must be an integer") from exc
    if not 1 <= limit <= MAX_LIMIT:
        raise SandboxError(400, "invalid_parameter", f"limit must be between 1 and {MAX_LIMIT}")
    cursor = request.query_params.get("cursor")
    ids = request.query_params.get("ids")
    wanted = set(ids.split(",")) if ids else None
    # Records are kept in creation order: the page after a cursor starts after that record
    # (ids compared as strings would misorder rma_9999 and rma_10000).
    entries = list(items.items())
    if cursor is not None:
        keys = [key for key, _ in entries]
        entries = (
            entries[keys.index(cursor) + 1 :]
            if cursor in items
            else [(key, r) for key, r in entries if key > cursor]  # the record was deleted
        )
    # Lazily: a page looks at the records up to its last one (and one more), not all of them.
    matching = (r for key, r in entries if keep(r) and (wanted is None or key in wanted))
    rows = list(islice(matching, limit + 1))
    page = rows[:limit]
    more = len(rows) > limit
    return {"data": page, "next_cursor": page[-1]["id"] if more and page else None}


def create_app(data: SandboxData | None = None) -> FastAPI:
    """The sandbox API over ``data`` (freshly seeded when omitted)."""
    store = data or seed()
    app = FastAPI(title="Switchyard sandbox upstream", version="1.0.0")
    oauth = OAuthServer()
    app.state.oauth = oauth  # tests expire its tokens and count its refreshes
    oauth.install(app)

    @app.exception_handler(SandboxError)
    async def _error(_: Request, exc: SandboxError) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": exc.code, "message": exc.message}}, status_code=exc.status
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": "http_error", "message": str(exc.detail)}},
            status_code=exc.status_code,
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": "invalid_body", "message": str(exc.errors()[0]["msg"])}},
            status_code=422,
        )

    @app.middleware("http")
    async def _auth(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.url.path in ("/", "/health") or request.url.path.startswith("/oauth/"):
            return await call_next(request)
        header = request.headers.get("authorization", "")
        key = header.removeprefix("Bearer ").strip()
        if key.startswith("sat_"):  # an OAuth access token
            if oauth.access_valid(key):
                return await call_next(request)
            return JSONResponse(
                {"error": {"code": "unauthorized", "message": "access token invalid or expired"}},
                status_code=401,
            )
        if not _KEY.match(key) or key == REVOKED_KEY:
            return JSONResponse(
                {"error": {"code": "unauthorized", "message": "invalid API key"}}, status_code=401
            )
        return await call_next(request)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    def one(items: dict[str, dict[str, Any]], key: str, what: str) -> dict[str, Any]:
        if key not in items:
            raise SandboxError(404, "not_found", f"no {what} with id {key}")
        return items[key]

    @app.get("/store/orders")
    def orders(request: Request, state: str | None = None) -> dict:
        return _page(store.orders, request, lambda r: state is None or r["state"] == state)

    @app.get("/store/orders/{key}")
    def order(key: str) -> dict:
        return one(store.orders, key, "order")

    @app.get("/store/returns")
    def returns(request: Request, state: str | None = None, order_id: str | None = None) -> dict:
        return _page(
            store.returns,
            request,
            lambda r: (
                (state is None or r["state"] == state)
                and (order_id is None or r["order_id"] == order_id)
            ),
        )

    @app.get("/store/returns/{key}")
    def return_(key: str) -> dict:
        return one(store.returns, key, "return")

    @app.get("/store/products")
    def products(request: Request) -> dict:
        return _page(store.products, request)

    @app.get("/store/products/{key}")
    def product(key: str) -> dict:
        return one(store.products, key, "product")

    def known(payload: dict[str, Any], fields: set[str]) -> None:
        unknown = set(payload) - fields
        if unknown:
            raise SandboxError(422, "invalid_body", f"unknown fields: {sorted(unknown)}")

    def order_lines(lines: Any) -> list[dict[str, Any]]:
        if not isinstance(lines, list) or not lines:
            raise SandboxError(422, "invalid_body", "lines: at least one line is required")
        out = []
        for line in lines:
            product = store.products.get(str(line.get("product_id")))
            if product is None:
                raise SandboxError(
                    422, "invalid_body", f"lines: no product {line.get('product_id')}"
                )
            qty = line.get("qty")
            if not isinstance(qty, int) or qty < 1:
                raise SandboxError(422, "invalid_body", "lines: qty must be a positive integer")
            price = line.get("price_cents", product["price_cents"])
            out.append({"product_id": product["id"], "sku": product["sku"],
                        "title": product["title"], "qty": qty, "price_cents": price})  # fmt: skip
        return out

    def check_state(payload: dict[str, Any], states: list[str]) -> None:
        if "state" in payload and payload["state"] not in states:
            raise SandboxError(422, "invalid_body", f"state: must be one of {', '.join(states)}")

    order_fields = {"number", "state", "buyer", "lines", "currency"}

    @app.post("/store/orders", status_code=201)
    def create_order(payload: dict[str, Any]) -> dict:
        known(payload, order_fields)
        buyer = payload.get("buyer") or {}
        if not buyer.get("email"):
            raise SandboxError(422, "invalid_body", "buyer.email is required")
        check_state(payload, ORDER_STATES)
        lines = order_lines(payload.get("lines"))
        key = store.next_id("ord")
        record = {
            "id": key, "number": payload.get("number") or f"SBX-{key.split('_')[1]}",
            "state": payload.get("state", "PENDING"), "buyer": buyer, "lines": lines,
            "total_cents": sum(line["qty"] * line["price_cents"] for line in lines),
            "currency": payload.get("currency", "EUR"), "created": _now(), "modified": _now(),
        }  # fmt: skip
        store.orders[key] = record
        return record

    @app.patch("/store/orders/{key}")
    def update_order(key: str, payload: dict[str, Any]) -> dict:
        record = one(store.orders, key, "order")
        known(payload, order_fields)
        check_state(payload, ORDER_STATES)
        changes = dict(payload)
        if "lines" in changes:
            changes["lines"] = order_lines(changes["lines"])
            changes["total_cents"] = sum(li["qty"] * li["price_cents"] for li in changes["lines"])
        if "buyer" in changes:
            changes["buyer"] = {**record["buyer"], **(changes["buyer"] or {})}
        record.update(changes, modified=_now())
        return record

    @app.delete("/store/orders/{key}", status_code=204)
    def delete_order(key: str) -> Response:
        one(store.orders, key, "order")
        del store.orders[key]
        return Response(status_code=204)

    return_fields = {"order_id", "state", "reason_code", "lines", "shipment"}

    def return_lines(lines: Any, reason: str | None) -> list[dict[str, Any]]:
        if not isinstance(lines, list) or not lines:
            raise SandboxError(422, "invalid_body", "lines: at least one line is required")
        for line in lines:
            if str(line.get("product_id")) not in store.products:
                raise SandboxError(
                    422, "invalid_body", f"lines: no product {line.get('product_id')}"
                )
            if not isinstance(line.get("qty"), int) or line["qty"] < 1:
                raise SandboxError(422, "invalid_body", "lines: qty must be a positive integer")
        return [{"product_id": li["product_id"], "qty": li["qty"],
                 "reason_code": li.get("reason_code") or reason} for li in lines]  # fmt: skip

    @app.post("/store/returns", status_code=201)
    def create_return(payload: dict[str, Any]) -> dict:
        known(payload, return_fields)
        if payload.get("order_id") not in store.orders:
            raise SandboxError(422, "invalid_body", f"order_id: no order {payload.get('order_id')}")
        check_state(payload, RETURN_STATES)
        reason = payload.get("reason_code")
        if reason is not None and reason not in REASON_CODES:
            raise SandboxError(
                422, "invalid_body", f"reason_code: one of {', '.join(REASON_CODES)}"
            )
        key = store.next_id("rma")
        order = store.orders[payload["order_id"]]
        record = {
            "id": key, "rma_number": f"RMA-{key.split('_')[1]}", "order_id": order["id"],
            "state": payload.get("state", "REQUESTED"), "reason_code": reason,
            "lines": return_lines(payload.get("lines"), reason),
            "shipment": {"tracking": None, "carrier": None, **(payload.get("shipment") or {})},
            "refund": {"amount_cents": None, "currency": order["currency"]},
            "created": _now(), "modified": _now(),
        }  # fmt: skip
        store.returns[key] = record
        return record

    @app.patch("/store/returns/{key}")
    def update_return(key: str, payload: dict[str, Any]) -> dict:
        record = one(store.returns, key, "return")
        known(payload, return_fields - {"order_id"})
        check_state(payload, RETURN_STATES)
        changes = dict(payload)
        if "lines" in changes:
            changes["lines"] = return_lines(changes["lines"], record["reason_code"])
        if "shipment" in changes:
            changes["shipment"] = {**record["shipment"], **(changes["shipment"] or {})}
        record.update(changes, modified=_now())
        return record

    @app.delete("/store/returns/{key}", status_code=204)
    def delete_return(key: str) -> Response:
        one(store.returns, key, "return")
        del store.returns[key]
        return Response(status_code=204)

    product_fields = {"sku", "title", "description", "price_cents", "stock"}

    def check_product(payload: dict[str, Any], *, creating: bool) -> None:
        known(payload, product_fields)
        if creating and not payload.get("title"):
            raise SandboxError(422, "invalid_body", "title is required")
        if creating and payload.get("price_cents") is None:
            raise SandboxError(422, "invalid_body", "price_cents is required")
        price = payload.get("price_cents")
        if price is not None and (not isinstance(price, int) or price < 0):
            raise SandboxError(422, "invalid_body", "price_cents must be a whole number >= 0")

    @app.post("/store/products", status_code=201)
    def create_product(payload: dict[str, Any]) -> dict:
        check_product(payload, creating=True)
        key = store.next_id("prod")
        record = {"id": key, "sku": None, "description": None, "stock": 0, **payload,
                  "created": _now(), "modified": _now()}  # fmt: skip
        store.products[key] = record
        return record

    @app.patch("/store/products/{key}")
    def update_product(key: str, payload: dict[str, Any]) -> dict:
        record = one(store.products, key, "product")
        check_product(payload, creating=False)
        record.update(payload, modified=_now())
        return record

    @app.delete("/store/products/{key}", status_code=204)
    def delete_product(key: str) -> Response:
        one(store.products, key, "product")
        del store.products[key]
        return Response(status_code=204)

    def crm(kind: str, items: dict[str, dict[str, Any]], prefix: str, fields: set[str]) -> None:
        @app.get(f"/crm/{kind}", name=f"list_{kind}")
        def list_(request: Request, email: str | None = None) -> dict:
            return _page(items, request, lambda r: email is None or r.get("email") == email)

        @app.get(f"/crm/{kind}/{{key}}", name=f"get_{kind}")
        def get_(key: str) -> dict:
            return one(items, key, kind[:-1])

        @app.post(f"/crm/{kind}", status_code=201, name=f"create_{kind}")
        def create_(payload: dict[str, Any]) -> dict:
            unknown = set(payload) - fields
            if unknown:
                raise SandboxError(422, "invalid_body", f"unknown fields: {sorted(unknown)}")
            if kind == "contacts" and not payload.get("email"):
                raise SandboxError(422, "invalid_body", "email is required")
            if kind == "companies" and not payload.get("name"):
                raise SandboxError(422, "invalid_body", "name is required")
            record = {"id": store.next_id(prefix), **payload, "created": _now(), "modified": _now()}
            items[record["id"]] = record
            return record

        @app.patch(f"/crm/{kind}/{{key}}", name=f"update_{kind}")
        def update_(key: str, payload: dict[str, Any]) -> dict:
            record = one(items, key, kind[:-1])
            unknown = set(payload) - fields
            if unknown:
                raise SandboxError(422, "invalid_body", f"unknown fields: {sorted(unknown)}")
            record.update(payload, modified=_now())
            return record

        @app.delete(f"/crm/{kind}/{{key}}", status_code=204, name=f"delete_{kind}")
        def delete_(key: str) -> Response:
            one(items, key, kind[:-1])
            del items[key]
            return Response(status_code=204)

    crm("contacts", store.contacts, "pers",
        {"given_name", "family_name", "email", "phone", "company_id"})  # fmt: skip
    crm("companies", store.companies, "comp", {"name", "website", "phone", "city", "country"})
    return app
