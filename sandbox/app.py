"""The sandbox upstream's HTTP API (store: orders, returns, products; CRM: contacts, companies).

Its own conventions, unlike the unified API: ``Authorization: Bearer sk_sandbox_...``,
upper-case states, money in cents, ``{data, next_cursor}`` lists paged by ``cursor`` (the last
id seen), and errors shaped ``{"error": {"code", "message"}}``.

`create_app` assembles it: the error shape and the key check, the OAuth server (``oauth``),
then the routes of each resource family over the shared helpers below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic_core import to_json
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from sandbox.data import ORDER_STATES, REASON_CODES, RETURN_STATES, SandboxData, seed
from sandbox.oauth import OAuthServer

DEMO_KEY = "sk_sandbox_demo"
REVOKED_KEY = "sk_sandbox_revoked"
MAX_LIMIT = 200  # the unified API's own page maximum
# Any well-formed key is accepted (the sandbox has no accounts); the revoked one never is.
_KEY = re.compile(r"^sk_sandbox_[A-Za-z0-9]+$")

# The fields each resource's body may carry.
ORDER_FIELDS = {"number", "state", "buyer", "lines", "currency"}
RETURN_FIELDS = {"order_id", "state", "reason_code", "lines", "shipment"}
PRODUCT_FIELDS = {"sku", "title", "description", "price_cents", "stock"}
# CRM kinds: (id prefix, the field a new record needs, the fields a body may carry).
CRM = {
    "contacts": ("pers", "email", {"given_name", "family_name", "email", "phone", "company_id"}),
    "companies": ("comp", "name", {"name", "website", "phone", "city", "country"}),
}

Records = dict[str, dict[str, Any]]


def create_app(data: SandboxData | None = None) -> FastAPI:
    """The sandbox API over ``data`` (freshly seeded when omitted)."""
    store = data or seed()
    app = FastAPI(title="Switchyard sandbox upstream", version="1.0.0")
    oauth = OAuthServer()
    app.state.oauth = oauth  # tests expire its tokens and count its refreshes
    oauth.install(app)
    _install_error_shape(app)
    _install_key_check(app, oauth)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    _add_order_routes(app, store)
    _add_return_routes(app, store)
    _add_product_routes(app, store)
    _add_crm_routes(app, store, "contacts", store.contacts)
    _add_crm_routes(app, store, "companies", store.companies)
    return app


# --- errors and authentication ---------------------------------------------------------------
class SandboxError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        self.status, self.code, self.message = status, code, message


def _error_body(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _install_error_shape(app: FastAPI) -> None:
    """Every error, the sandbox's own and the framework's, answers ``{"error": {...}}``."""

    @app.exception_handler(SandboxError)
    async def _error(_: Request, exc: SandboxError) -> JSONResponse:
        return _error_body(exc.status, exc.code, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error_body(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error_body(422, "invalid_body", str(exc.errors()[0]["msg"]))


def _install_key_check(app: FastAPI, oauth: OAuthServer) -> None:
    """Every call but health and the OAuth endpoints needs an API key or an OAuth access token.

    A plain ASGI middleware: ``@app.middleware("http")`` runs each request through a task and
    a stream of its own, which cost more than a list page (the sync benchmark serves its runs
    from its process)."""
    app.add_middleware(_KeyCheck, oauth=oauth)


class _KeyCheck:
    def __init__(self, app: ASGIApp, oauth: OAuthServer) -> None:
        self.app = app
        self.oauth = oauth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self._refusal(scope) if scope["type"] == "http" else None
        if refused is None:
            await self.app(scope, receive, send)
        else:
            await refused(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        path = scope["path"]
        if path in ("/", "/health") or path.startswith("/oauth/"):
            return None
        header = Headers(scope=scope).get("authorization", "")
        key = header.removeprefix("Bearer ").strip()
        if key.startswith("sat_"):  # an OAuth access token
            if self.oauth.access_valid(key):
                return None
            return _error_body(401, "unauthorized", "access token invalid or expired")
        if not _KEY.match(key) or key == REVOKED_KEY:
            return _error_body(401, "unauthorized", "invalid API key")
        return None


# --- shared helpers: paging, lookups, body checks --------------------------------------------
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _page(
    items: Records,
    request: Request,
    keep: Callable[[dict[str, Any]], bool] = lambda r: True,
) -> Response:
    """A list page as JSON written by pydantic-core: the framework's own encoding of the same
    page cost three times as much (the sync benchmark serves its runs from its process). The
    list routes are ``async`` for the same reason: a page takes microseconds, the thread pool
    a sync route runs in cost more than that."""
    try:
        limit = int(request.query_params.get("limit", "20"))
    except ValueError as exc:
        raise SandboxError(400, "invalid_parameter", "limit must be an integer") from exc
    if not 1 <= limit <= MAX_LIMIT:
        raise SandboxError(400, "invalid_parameter", f"limit must be between 1 and {MAX_LIMIT}")
    cursor = request.query_params.get("cursor")
    ids = request.query_params.get("ids")
    wanted = set(ids.split(",")) if ids else None
    # Lazily: a page looks at the records up to its last one (and one more), not all of them.
    matching = (
        r for key, r in _after(items, cursor) if keep(r) and (wanted is None or key in wanted)
    )
    rows = list(islice(matching, limit + 1))
    page = rows[:limit]
    more = len(rows) > limit
    body = {"data": page, "next_cursor": page[-1]["id"] if more and page else None}
    return Response(to_json(body), media_type="application/json")


def _after(items: Records, cursor: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """The records after ``cursor``, in creation order (all of them without a cursor).

    Records are kept in creation order: the page after a cursor starts after that record (ids
    compared as strings would misorder rma_9999 and rma_10000). Walking the keys to the cursor
    copies nothing: a list of a big store's records per page cost more than the page itself.
    """
    if cursor is None:
        return iter(items.items())
    if cursor not in items:  # the record was deleted
        return ((key, r) for key, r in items.items() if key > cursor)
    keys = iter(items)
    for key in keys:
        if key == cursor:
            break
    return ((key, items[key]) for key in keys)


def _one(items: Records, key: str, what: str) -> dict[str, Any]:
    if key not in items:
        raise SandboxError(404, "not_found", f"no {what} with id {key}")
    return items[key]


def _deleted(items: Records, key: str, what: str) -> Response:
    _one(items, key, what)
    del items[key]
    return Response(status_code=204)


def _known(payload: dict[str, Any], fields: set[str]) -> None:
    unknown = set(payload) - fields
    if unknown:
        raise SandboxError(422, "invalid_body", f"unknown fields: {sorted(unknown)}")


def _check_state(payload: dict[str, Any], states: list[str]) -> None:
    if "state" in payload and payload["state"] not in states:
        raise SandboxError(422, "invalid_body", f"state: must be one of {', '.join(states)}")


def _check_lines(products: Records, lines: Any) -> list[dict[str, Any]]:
    """Order and return lines: at least one, each naming a known product and a quantity."""
    if not isinstance(lines, list) or not lines:
        raise SandboxError(422, "invalid_body", "lines: at least one line is required")
    for line in lines:
        if str(line.get("product_id")) not in products:
            raise SandboxError(422, "invalid_body", f"lines: no product {line.get('product_id')}")
        qty = line.get("qty")
        if not isinstance(qty, int) or qty < 1:
            raise SandboxError(422, "invalid_body", "lines: qty must be a positive integer")
    return lines


# --- store: orders ---------------------------------------------------------------------------
def _order_lines(products: Records, lines: Any) -> list[dict[str, Any]]:
    out = []
    for line in _check_lines(products, lines):
        product = products[str(line.get("product_id"))]
        price = line.get("price_cents", product["price_cents"])
        out.append({"product_id": product["id"], "sku": product["sku"], "title": product["title"],
                    "qty": line["qty"], "price_cents": price})  # fmt: skip
    return out


def _new_order(store: SandboxData, payload: dict[str, Any]) -> dict[str, Any]:
    _known(payload, ORDER_FIELDS)
    buyer = payload.get("buyer") or {}
    if not buyer.get("email"):
        raise SandboxError(422, "invalid_body", "buyer.email is required")
    _check_state(payload, ORDER_STATES)
    lines = _order_lines(store.products, payload.get("lines"))
    key = store.next_id("ord")
    return {
        "id": key, "number": payload.get("number") or f"SBX-{key.split('_')[1]}",
        "state": payload.get("state", "PENDING"), "buyer": buyer, "lines": lines,
        "total_cents": sum(line["qty"] * line["price_cents"] for line in lines),
        "currency": payload.get("currency", "EUR"), "created": _now(), "modified": _now(),
    }  # fmt: skip


def _add_order_routes(app: FastAPI, store: SandboxData) -> None:

    @app.get("/store/orders")
    async def orders(request: Request, state: str | None = None) -> Response:
        return _page(store.orders, request, lambda r: state is None or r["state"] == state)

    @app.get("/store/orders/{key}")
    def order(key: str) -> dict:
        return _one(store.orders, key, "order")

    @app.post("/store/orders", status_code=201)
    def create_order(payload: dict[str, Any]) -> dict:
        record = _new_order(store, payload)
        store.orders[record["id"]] = record
        return record

    @app.patch("/store/orders/{key}")
    def update_order(key: str, payload: dict[str, Any]) -> dict:
        record = _one(store.orders, key, "order")
        _known(payload, ORDER_FIELDS)
        _check_state(payload, ORDER_STATES)
        changes = dict(payload)
        if "lines" in changes:
            changes["lines"] = _order_lines(store.products, changes["lines"])
            changes["total_cents"] = sum(li["qty"] * li["price_cents"] for li in changes["lines"])
        if "buyer" in changes:
            changes["buyer"] = {**record["buyer"], **(changes["buyer"] or {})}
        record.update(changes, modified=_now())
        return record

    @app.delete("/store/orders/{key}", status_code=204)
    def delete_order(key: str) -> Response:
        return _deleted(store.orders, key, "order")


# --- store: returns --------------------------------------------------------------------------
def _return_lines(products: Records, lines: Any, reason: str | None) -> list[dict[str, Any]]:
    return [{"product_id": li["product_id"], "qty": li["qty"],
             "reason_code": li.get("reason_code") or reason}
            for li in _check_lines(products, lines)]  # fmt: skip


def _new_return(store: SandboxData, payload: dict[str, Any]) -> dict[str, Any]:
    _known(payload, RETURN_FIELDS)
    if payload.get("order_id") not in store.orders:
        raise SandboxError(422, "invalid_body", f"order_id: no order {payload.get('order_id')}")
    _check_state(payload, RETURN_STATES)
    reason = payload.get("reason_code")
    if reason is not None and reason not in REASON_CODES:
        raise SandboxError(422, "invalid_body", f"reason_code: one of {', '.join(REASON_CODES)}")
    key = store.next_id("rma")
    order = store.orders[payload["order_id"]]
    return {
        "id": key, "rma_number": f"RMA-{key.split('_')[1]}", "order_id": order["id"],
        "state": payload.get("state", "REQUESTED"), "reason_code": reason,
        "lines": _return_lines(store.products, payload.get("lines"), reason),
        "shipment": {"tracking": None, "carrier": None, **(payload.get("shipment") or {})},
        "refund": {"amount_cents": None, "currency": order["currency"]},
        "created": _now(), "modified": _now(),
    }  # fmt: skip


def _add_return_routes(app: FastAPI, store: SandboxData) -> None:

    @app.get("/store/returns")
    async def returns(
        request: Request, state: str | None = None, order_id: str | None = None
    ) -> Response:
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
        return _one(store.returns, key, "return")

    @app.post("/store/returns", status_code=201)
    def create_return(payload: dict[str, Any]) -> dict:
        record = _new_return(store, payload)
        store.returns[record["id"]] = record
        return record

    @app.patch("/store/returns/{key}")
    def update_return(key: str, payload: dict[str, Any]) -> dict:
        record = _one(store.returns, key, "return")
        _known(payload, RETURN_FIELDS - {"order_id"})
        _check_state(payload, RETURN_STATES)
        changes = dict(payload)
        if "lines" in changes:
            changes["lines"] = _return_lines(
                store.products, changes["lines"], record["reason_code"]
            )
        if "shipment" in changes:
            changes["shipment"] = {**record["shipment"], **(changes["shipment"] or {})}
        record.update(changes, modified=_now())
        return record

    @app.delete("/store/returns/{key}", status_code=204)
    def delete_return(key: str) -> Response:
        return _deleted(store.returns, key, "return")


# --- store: products -------------------------------------------------------------------------
def _check_product(payload: dict[str, Any], *, creating: bool) -> None:
    _known(payload, PRODUCT_FIELDS)
    if creating and not payload.get("title"):
        raise SandboxError(422, "invalid_body", "title is required")
    if creating and payload.get("price_cents") is None:
        raise SandboxError(422, "invalid_body", "price_cents is required")
    price = payload.get("price_cents")
    if price is not None and (not isinstance(price, int) or price < 0):
        raise SandboxError(422, "invalid_body", "price_cents must be a whole number >= 0")


def _add_product_routes(app: FastAPI, store: SandboxData) -> None:

    @app.get("/store/products")
    async def products(request: Request) -> Response:
        return _page(store.products, request)

    @app.get("/store/products/{key}")
    def product(key: str) -> dict:
        return _one(store.products, key, "product")

    @app.post("/store/products", status_code=201)
    def create_product(payload: dict[str, Any]) -> dict:
        _check_product(payload, creating=True)
        key = store.next_id("prod")
        record = {"id": key, "sku": None, "description": None, "stock": 0, **payload,
                  "created": _now(), "modified": _now()}  # fmt: skip
        store.products[key] = record
        return record

    @app.patch("/store/products/{key}")
    def update_product(key: str, payload: dict[str, Any]) -> dict:
        record = _one(store.products, key, "product")
        _check_product(payload, creating=False)
        record.update(payload, modified=_now())
        return record

    @app.delete("/store/products/{key}", status_code=204)
    def delete_product(key: str) -> Response:
        return _deleted(store.products, key, "product")


# --- CRM: contacts and companies -------------------------------------------------------------
def _add_crm_routes(app: FastAPI, store: SandboxData, kind: str, items: Records) -> None:
    """``/crm/<kind>`` over ``items``: list (by ``email`` too), get, create, update, delete."""
    prefix, required, fields = CRM[kind]
    what = kind[:-1]  # as the sandbox has always said it: "contact", "companie"

    @app.get(f"/crm/{kind}", name=f"list_{kind}")
    async def list_(request: Request, email: str | None = None) -> Response:
        return _page(items, request, lambda r: email is None or r.get("email") == email)

    @app.get(f"/crm/{kind}/{{key}}", name=f"get_{kind}")
    def get_(key: str) -> dict:
        return _one(items, key, what)

    @app.post(f"/crm/{kind}", status_code=201, name=f"create_{kind}")
    def create_(payload: dict[str, Any]) -> dict:
        _known(payload, fields)
        if not payload.get(required):
            raise SandboxError(422, "invalid_body", f"{required} is required")
        record = {"id": store.next_id(prefix), **payload, "created": _now(), "modified": _now()}
        items[record["id"]] = record
        return record

    @app.patch(f"/crm/{kind}/{{key}}", name=f"update_{kind}")
    def update_(key: str, payload: dict[str, Any]) -> dict:
        record = _one(items, key, what)
        _known(payload, fields)
        record.update(payload, modified=_now())
        return record

    @app.delete(f"/crm/{kind}/{{key}}", status_code=204, name=f"delete_{kind}")
    def delete_(key: str) -> Response:
        return _deleted(items, key, what)
