"""A faithful local Shopify Admin API subset (REST 2025-01 + GraphQL returns).

REST lists: ``{"orders": [...]}`` / ``{"products": [...]}``, ``limit`` up to 250, cursor
pagination through the ``Link`` header's ``page_info`` (which admits no other filter beside
``limit``/``fields``), errors ``{"errors": ...}``; auth by ``X-Shopify-Access-Token``.
GraphQL (``POST /graphql.json``): ``orders(first, after, query)`` with nested ``returns``, and
``return(id)``. 429 answers carry ``Retry-After`` (seconds, as a decimal).

Writes (REST): ``POST /orders.json`` and ``/products.json`` answer 201 ``{"order"|"product"}``;
``PUT /{orders,products}/{id}.json`` 200; ``DELETE`` 200 ``{}``. A body without its root key is
400 ``{"errors": {"order": "Required parameter missing or invalid"}}``; invalid records are 422
``{"errors": {"field": ["message"]}}``.
"""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import RequestResponseEndpoint

from tests.platform_api.unified.fakes.common import FakeState, install_recorder

TOKEN = "shpat_fake_token"
INVALID_TOKEN = {
    "errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"
}
EPOCH = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
RETURN_STATUSES = ["REQUESTED", "OPEN", "CLOSED", "DECLINED", "CANCELED"]
RETURN_REASONS = ["DEFECTIVE", "SIZE_TOO_SMALL", "SIZE_TOO_LARGE", "WRONG_ITEM", "UNWANTED"]


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S-05:00")


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_data(orders: int = 130, products: int = 60, seed: int = 3) -> dict[str, Any]:
    rng = random.Random(seed)
    product_rows: list[dict[str, Any]] = []
    for i in range(products):
        pid = 8_000_000_000 + i
        created = EPOCH + timedelta(hours=i)
        price = f"{rng.randrange(5, 120)}.{rng.choice(['00', '50', '99'])}"
        product_rows.append({
            "id": pid, "title": f"Product {i}", "body_html": f"<p>Product {i}</p>",
            "vendor": "Acme", "product_type": "Apparel", "handle": f"product-{i}",
            "status": "active", "created_at": _ts(created), "updated_at": _ts(created),
            "admin_graphql_api_id": f"gid://shopify/Product/{pid}",
            "variants": [{"id": 4_000_000_000 + i, "product_id": pid, "title": "Default Title",
                          "sku": f"ACME-{i:04d}", "price": price,
                          "inventory_quantity": rng.randrange(0, 300)}],
        })  # fmt: skip
    order_rows, returns = [], []
    for i in range(orders):
        oid = 5_000_000_000 + i
        created = EPOCH + timedelta(hours=5 * i)
        items: list[dict[str, Any]] = []
        for product in rng.sample(product_rows, rng.randint(1, 3)):
            variant = product["variants"][0]
            items.append({"id": 13_000_000_000 + len(items) + 10 * i, "product_id": product["id"],
                          "variant_id": variant["id"], "sku": variant["sku"],
                          "title": product["title"], "name": product["title"],
                          "quantity": rng.randint(1, 2), "price": variant["price"]})  # fmt: skip
        total = sum(float(it["price"]) * it["quantity"] for it in items)
        cancelled = rng.random() < 0.1
        fulfillment = None if cancelled else rng.choice([None, "partial", "fulfilled"])
        order = {
            "id": oid, "admin_graphql_api_id": f"gid://shopify/Order/{oid}",
            "name": f"#{1001 + i}", "order_number": 1001 + i, "email": f"buyer{i}@example.com",
            "created_at": _ts(created), "updated_at": _ts(created + timedelta(hours=1)),
            "cancelled_at": _ts(created + timedelta(hours=2)) if cancelled else None,
            "financial_status": rng.choice(["paid", "pending", "refunded"]),
            "fulfillment_status": fulfillment, "currency": "USD",
            "total_price": f"{total:.2f}", "line_items": items,
            "customer": {"id": 7_000_000 + i, "first_name": "Buyer", "last_name": str(i),
                         "email": f"buyer{i}@example.com"},
        }  # fmt: skip
        order_rows.append(order)
        if fulfillment == "fulfilled" and i % 2 == 0:
            for r in range(1 + (i % 4 == 0)):
                rid = 9_000_000 + i * 10 + r
                status = rng.choice(RETURN_STATUSES)
                item = items[r % len(items)]
                amount = float(item["price"]) * item["quantity"]
                returns.append({
                    "id": f"gid://shopify/Return/{rid}", "name": f"{order['name']}-R{r + 1}",
                    "status": status, "createdAt": _iso(created + timedelta(days=3)),
                    "closedAt": _iso(created + timedelta(days=6)) if status == "CLOSED" else None,
                    "order": {"id": order["admin_graphql_api_id"]},
                    "returnLineItems": {"nodes": [{
                        "id": f"gid://shopify/ReturnLineItem/{rid}", "quantity": item["quantity"],
                        "returnReason": rng.choice(RETURN_REASONS), "returnReasonNote": "",
                        "fulfillmentLineItem": {"lineItem": {
                            "id": f"gid://shopify/LineItem/{item['id']}", "sku": item["sku"],
                            "product": {"id": f"gid://shopify/Product/{item['product_id']}"}}}}]},
                    "refunds": {"nodes": [{"totalRefundedSet": {"shopMoney": {
                        "amount": f"{amount:.2f}", "currencyCode": "USD"}}}]
                        if status == "CLOSED" else []},
                    "reverseFulfillmentOrders": {"nodes": [{"reverseDeliveries": {"nodes": [{
                        "deliverable": {"__typename": "ReverseDeliveryShippingDeliverable",
                                        "tracking": {"number": f"1ZR{rid}", "carrierName": "UPS"}}
                    }]}}]},
                })  # fmt: skip
    return {"orders": order_rows, "products": product_rows, "returns": returns}


def _encode(state: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode().rstrip("=")


def _decode(token: str) -> dict[str, Any] | None:
    try:
        return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except ValueError:
        return None


def create_app(data: dict[str, Any] | None = None) -> tuple[FastAPI, FakeState]:
    data = data or build_data()
    state = FakeState()
    app = FastAPI()
    install_recorder(app, state)

    @app.middleware("http")
    async def _auth(request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.headers.get("x-shopify-access-token") != TOKEN:
            return JSONResponse(INVALID_TOKEN, status_code=401)
        return await call_next(request)

    def rest_list(request: Request, key: str, rows: list[dict[str, Any]]) -> JSONResponse:
        params = dict(request.query_params)
        try:
            limit = int(params.get("limit", 50))
        except ValueError:
            return JSONResponse({"errors": {"limit": ["is not a number"]}}, status_code=400)
        if not 1 <= limit <= 250:
            return JSONResponse({"errors": {"limit": ["must be between 1 and 250"]}}, 400)
        page_info = params.get("page_info")
        if page_info:
            extra = set(params) - {"limit", "page_info", "fields"}
            cursor = _decode(page_info)
            if extra or cursor is None:
                return JSONResponse({"errors": "page_info - Invalid value."}, status_code=400)
            filters, after = cursor["filters"], cursor["after"]
        else:
            filters = {k: v for k, v in params.items() if k not in ("limit", "fields")}
            after = 0
        selected = [r for r in rows if r["id"] > after and _matches(r, filters)]
        page = selected[:limit]
        if params.get("fields"):
            wanted = params["fields"].split(",")
            page = [{k: r[k] for k in wanted if k in r} for r in page]
        headers = {}
        if len(selected) > limit:
            token = _encode({"filters": filters, "after": page[-1]["id"]})
            url = (
                f"{request.base_url}{request.url.path.lstrip('/')}?limit={limit}&page_info={token}"
            )
            headers["Link"] = f'<{url}>; rel="next"'
        return JSONResponse({key: page}, headers=headers)

    def rest_one(key: str, rows: list[dict[str, Any]], record_id: str) -> JSONResponse:
        for row in rows:
            if str(row["id"]) == record_id:
                return JSONResponse({key: row})
        return JSONResponse({"errors": "Not Found"}, status_code=404)

    @app.get("/orders.json")
    def orders(request: Request) -> JSONResponse:
        return rest_list(request, "orders", data["orders"])

    @app.get("/orders/{record_id}.json")
    def order(record_id: str) -> JSONResponse:
        return rest_one("order", data["orders"], record_id)

    @app.get("/products.json")
    def products(request: Request) -> JSONResponse:
        return rest_list(request, "products", data["products"])

    @app.get("/products/{record_id}.json")
    def product(record_id: str) -> JSONResponse:
        return rest_one("product", data["products"], record_id)

    counter = {"next": 0}

    def next_id(base: int) -> int:
        counter["next"] += 1
        return base + 900_000 + counter["next"]

    def now() -> str:
        return _ts(datetime.now(UTC) - timedelta(hours=5))

    def invalid(errors: dict[str, list[str]]) -> JSONResponse:
        return JSONResponse({"errors": errors}, status_code=422)

    def missing_root(key: str) -> JSONResponse:
        return JSONResponse(
            {"errors": {key: "Required parameter missing or invalid"}}, status_code=400
        )

    def find(rows: list[dict[str, Any]], record_id: str) -> dict[str, Any] | None:
        return next((r for r in rows if str(r["id"]) == record_id), None)

    def variant(variant_id: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        for product in data["products"]:
            for v in product["variants"]:
                if v["id"] == variant_id:
                    return product, v
        return None

    @app.post("/orders.json")
    async def create_order(request: Request) -> JSONResponse:
        payload = (await request.json()).get("order")
        if not isinstance(payload, dict):
            return missing_root("order")
        lines = payload.get("line_items") or []
        if not lines:
            return invalid({"line_items": ["can't be blank"]})
        oid = next_id(5_000_000_000)
        items = []
        for n, line in enumerate(lines):
            quantity = line.get("quantity")
            if not isinstance(quantity, int) or quantity < 1:
                return invalid({"line_items": ["quantity must be greater than or equal to 1"]})
            if "variant_id" in line:
                found = variant(line["variant_id"])
                if found is None:
                    return invalid({"line_items": ["variant_id is invalid"]})
                product, v = found
                item = {"product_id": product["id"], "variant_id": v["id"], "sku": v["sku"],
                        "title": product["title"], "name": product["title"],
                        "price": line.get("price") or v["price"]}  # fmt: skip
            else:
                if not line.get("title") or line.get("price") is None:
                    return invalid({"line_items": ["custom items need a title and a price"]})
                item = {"product_id": None, "variant_id": None, "sku": line.get("sku"),
                        "title": line["title"], "name": line["title"],
                        "price": f"{float(line['price']):.2f}"}  # fmt: skip
            items.append({"id": oid * 10 + n, "quantity": quantity, **item})
        customer = payload.get("customer") or {}
        number = 1001 + len(data["orders"]) + counter["next"]
        order = {
            "id": oid, "admin_graphql_api_id": f"gid://shopify/Order/{oid}",
            "name": f"#{number}", "order_number": number, "email": payload.get("email"),
            "created_at": now(), "updated_at": now(), "cancelled_at": None,
            "financial_status": payload.get("financial_status") or "paid",
            "fulfillment_status": None, "currency": payload.get("currency") or "USD",
            "total_price": f"{sum(float(i['price']) * i['quantity'] for i in items):.2f}",
            "line_items": items,
            "customer": {"id": oid + 1, "first_name": customer.get("first_name"),
                         "last_name": customer.get("last_name"), "email": payload.get("email")}
                        if customer else None,
            "shipping_address": payload.get("shipping_address"),
        }  # fmt: skip
        data["orders"].append(order)
        return JSONResponse({"order": order}, status_code=201)

    @app.put("/orders/{record_id}.json")
    async def update_order(record_id: str, request: Request) -> JSONResponse:
        order = find(data["orders"], record_id)
        if order is None:
            return JSONResponse({"errors": "Not Found"}, status_code=404)
        payload = (await request.json()).get("order")
        if not isinstance(payload, dict):
            return missing_root("order")
        if "email" in payload:
            if payload["email"] and "@" not in payload["email"]:
                return invalid({"email": ["is invalid"]})
            order["email"] = payload["email"]
        if "shipping_address" in payload:
            order["shipping_address"] = payload["shipping_address"]
        order["updated_at"] = now()
        return JSONResponse({"order": order})

    @app.delete("/orders/{record_id}.json")
    def delete_order(record_id: str) -> JSONResponse:
        order = find(data["orders"], record_id)
        if order is None:
            return JSONResponse({"errors": "Not Found"}, status_code=404)
        data["orders"].remove(order)
        return JSONResponse({})

    def apply_variants(product: dict[str, Any], variants: list[dict[str, Any]]) -> str | None:
        for change in variants:
            current = next((v for v in product["variants"] if v["id"] == change.get("id")), None)
            if "id" in change and current is None:
                return "variants: id is invalid"
            if current is None:
                current = {"id": next_id(4_000_000_000), "product_id": product["id"],
                           "title": "Default Title", "sku": None, "price": "0.00",
                           "inventory_quantity": 0}  # fmt: skip
                product["variants"].append(current)
            if "price" in change:
                current["price"] = f"{float(change['price']):.2f}"
            if "sku" in change:
                current["sku"] = change["sku"]
        return None

    @app.post("/products.json")
    async def create_product(request: Request) -> JSONResponse:
        payload = (await request.json()).get("product")
        if not isinstance(payload, dict):
            return missing_root("product")
        if not payload.get("title"):
            return invalid({"title": ["can't be blank"]})
        pid = next_id(8_000_000_000)
        product = {
            "id": pid, "title": payload["title"], "body_html": payload.get("body_html"),
            "vendor": "Acme", "product_type": "",
            "handle": payload["title"].lower().replace(" ", "-"),
            "status": "active", "created_at": now(), "updated_at": now(),
            "admin_graphql_api_id": f"gid://shopify/Product/{pid}", "variants": [],
        }  # fmt: skip
        error = apply_variants(product, payload.get("variants") or [{}])
        if error:
            return invalid({"variants": [error]})
        data["products"].append(product)
        return JSONResponse({"product": product}, status_code=201)

    @app.put("/products/{record_id}.json")
    async def update_product(record_id: str, request: Request) -> JSONResponse:
        product = find(data["products"], record_id)
        if product is None:
            return JSONResponse({"errors": "Not Found"}, status_code=404)
        payload = (await request.json()).get("product")
        if not isinstance(payload, dict):
            return missing_root("product")
        if "title" in payload and not payload["title"]:
            return invalid({"title": ["can't be blank"]})
        error = apply_variants(product, payload.get("variants") or [])
        if error:
            return invalid({"variants": [error]})
        for key in ("title", "body_html"):
            if key in payload:
                product[key] = payload[key]
        product["updated_at"] = now()
        return JSONResponse({"product": product})

    @app.delete("/products/{record_id}.json")
    def delete_product(record_id: str) -> JSONResponse:
        product = find(data["products"], record_id)
        if product is None:
            return JSONResponse({"errors": "Not Found"}, status_code=404)
        data["products"].remove(product)
        return JSONResponse({})

    @app.post("/graphql.json")
    async def graphql(request: Request) -> JSONResponse:
        payload = await request.json()
        query, variables = payload.get("query", ""), payload.get("variables") or {}
        if "return(id:" in query.replace(" ", "").replace("return(id:$id)", "return(id:"):
            found = next((r for r in data["returns"] if r["id"] == variables.get("id")), None)
            return JSONResponse({"data": {"return": found}})
        if "orders(" not in query:
            return JSONResponse(
                {"errors": [{"message": "Field doesn't exist on type 'QueryRoot'"}]}
            )
        first = variables.get("first")
        if not isinstance(first, int) or not 1 <= first <= 250:
            return JSONResponse({"errors": [{"message": "first must be between 1 and 250"}],
                                 "data": None})  # fmt: skip
        if variables.get("query") != "-return_status:no_return":
            return JSONResponse({"errors": [{"message": "unexpected search"}], "data": None})
        after = 0
        if variables.get("after"):
            cursor = _decode(variables["after"])
            assert cursor is not None  # only cursors this fake handed out come back
            after = int(cursor["after"])
        with_returns = []
        for o in data["orders"]:
            rets = [r for r in data["returns"] if r["order"]["id"] == o["admin_graphql_api_id"]]
            if rets and o["id"] > after:
                with_returns.append((o, rets))
        page = with_returns[:first]
        has_next = len(with_returns) > first
        nodes = [{"id": o["admin_graphql_api_id"], "name": o["name"],
                  "returns": {"nodes": rets}} for o, rets in page]  # fmt: skip
        end = _encode({"after": page[-1][0]["id"]}) if page else None
        return JSONResponse({
            "data": {"orders": {"nodes": nodes,
                                "pageInfo": {"hasNextPage": has_next, "endCursor": end}}},
            "extensions": {"cost": {"requestedQueryCost": 52, "actualQueryCost": 30}},
        })  # fmt: skip

    return app, state


def _matches(row: dict[str, Any], filters: dict[str, str]) -> bool:
    status = filters.get("status", "open")
    if status == "cancelled" and not row.get("cancelled_at"):
        return False
    if status == "open" and row.get("cancelled_at"):
        return False
    fulfillment = filters.get("fulfillment_status")
    if fulfillment == "shipped" and row.get("fulfillment_status") != "fulfilled":
        return False
    if fulfillment == "partial" and row.get("fulfillment_status") != "partial":
        return False
    if fulfillment == "unshipped" and row.get("fulfillment_status") is not None:
        return False
    ids = filters.get("ids")
    if ids is not None and str(row["id"]) not in ids.split(","):
        return False
    financial = filters.get("financial_status")
    return not (financial and row.get("financial_status") != financial)
