"""A faithful local ShipBob API subset (orders, returns, products).

Lists are bare JSON arrays paged by ``Page``/``Limit`` (Limit at most 250) with the
``Page-Number``, ``Total-Pages``, ``Total-Count`` and ``Page-Size`` response headers; returns
filter by a comma-separated ``Status``. Auth: ``Authorization: Bearer <token>``; a bad token is
a bare 401. Validation errors are ASP.NET problem details; 429 carries ``x-retry-after``
and ``{"statusCode": 429, "message": ...}``.

Writes name a channel in the ``shipbob_channel_id`` header (``GET /channel`` lists the
token's channels and their scopes): ``POST /order`` (ReferenceId model) and ``POST /return``
answer 201 with the record; ``POST /order/{id}:cancel`` answers 200 with the cancel result,
422 when the order can no longer be cancelled. Orders filter by ``ReferenceIds``.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import RequestResponseEndpoint

from tests.platform_api.unified.fakes.common import FakeState, install_recorder

TOKEN = "shipbob_pat_fake"
EPOCH = datetime(2025, 4, 1, 8, 0, tzinfo=UTC)
ORDER_STATUSES = ["Processing", "Exception", "PartiallyFulfilled", "Fulfilled", "Cancelled"]
RETURN_STATUSES = ["AwaitingArrival", "Arrived", "Processing", "Completed", "Cancelled"]


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000+00:00")


CHANNELS: list[dict[str, Any]] = [
    {"id": 100102, "name": "Privileged Access Token", "application_name": "SMA",
     "scopes": ["channels_read", "orders_read", "orders_write", "returns_read",
                "returns_write", "products_read"]},
    {"id": 100, "name": "ShipBob Default", "application_name": "ShipBob",
     "scopes": ["channels_read", "orders_read", "returns_read", "products_read"]},
]  # fmt: skip
FULFILLMENT_CENTER = {"id": 8, "name": "Cicero (IL)"}


def problem(errors: dict[str, list[str]], status: int = 400) -> JSONResponse:
    return JSONResponse(
        {
            "type": "https://tools.ietf.org/html/rfc7231#section-6.5.1",
            "title": "One or more validation errors occurred.",
            "status": status,
            "errors": errors,
        },
        status_code=status,
    )


def build_data(
    orders: int = 140, returns: int = 75, products: int = 55, seed: int = 5
) -> dict[str, Any]:
    rng = random.Random(seed)
    product_rows: list[dict[str, Any]] = [
        {"id": 600_000 + i, "reference_id": f"ref-{i}", "name": f"Widget {i}",
         "sku": f"WID-{i:03d}", "barcode": f"0{i:011d}", "gtin": None, "upc": None,
         "unit_price": round(rng.uniform(3, 80), 2),
         "created_date": _ts(EPOCH + timedelta(hours=i)),
         "channel": {"id": 100, "name": "Acme Store"},
         "total_fulfillable_quantity": rng.randrange(0, 500), "total_onhand_quantity": 0,
         "total_committed_quantity": 0}
        for i in range(products)
    ]  # fmt: skip
    order_rows: list[dict[str, Any]] = []
    for i in range(orders):
        created = EPOCH + timedelta(hours=3 * i)
        lines: list[dict[str, Any]] = [
            {"id": p["id"], "reference_id": p["reference_id"], "quantity": rng.randint(1, 4),
             "sku": p["sku"], "gtin": None, "upc": None, "unit_price": p["unit_price"],
             "external_line_id": None}
            for p in rng.sample(product_rows, rng.randint(1, 2))
        ]  # fmt: skip
        order_rows.append({
            "id": 200_000 + i, "created_date": _ts(created), "purchase_date": _ts(created),
            "reference_id": f"store-{i}", "order_number": f"SO-{1000 + i}",
            "status": rng.choice(ORDER_STATUSES), "type": "DTC",
            "channel": {"id": 100, "name": "Acme Store"}, "shipping_method": "Standard",
            "recipient": {"name": f"Customer {i}", "email": f"customer{i}@example.com",
                          "phone_number": None,
                          "address": {"address1": "1 Main St", "city": "Chicago", "state": "IL",
                                      "country": "US", "zip_code": "60601"}},
            "products": lines, "tags": [],
            "shipments": [{"id": 400_000 + i, "order_id": 200_000 + i,
                           "reference_id": f"store-{i}", "location": FULFILLMENT_CENTER}],
            "financials": {"total_price": round(
                sum(x["unit_price"] * x["quantity"] for x in lines), 2)},
        })  # fmt: skip
    return_rows = []
    for i in range(returns):
        order = order_rows[i]
        created = EPOCH + timedelta(days=2, hours=5 * i)
        status = rng.choice(RETURN_STATUSES)
        return_rows.append({
            "id": 300_000 + i, "reference_id": f"RMA-{i}", "status": status,
            "return_type": "Regular", "store_order_id": order["reference_id"],
            "customer_name": "Acme Store", "tracking_number": f"9400{rng.randrange(10**9, 10**10)}",
            "original_shipment_id": 400_000 + i, "insert_date": _ts(created),
            "completed_date": _ts(created + timedelta(days=4)) if status == "Completed" else None,
            "invoice_amount": 2.5, "channel": {"id": 100, "name": "Acme Store"},
            "fulfillment_center": {"id": 8, "name": "Cicero (IL)"},
            "inventory": [
                {"id": line["id"], "name": f"Widget {line['id'] - 600_000}",
                 "quantity": line["quantity"],
                 "action_requested": {"action": "Restock", "action_type": "InventoryDefault",
                                      "instructions": "Customer: too small"},
                 "action_taken": []}
                for line in order["products"]
            ],
            "transactions": [{"amount": 2.5, "transaction_type": "ReturnLabelInvoice"}],
        })  # fmt: skip
    return {"orders": order_rows, "returns": return_rows, "products": product_rows}


def create_app(data: dict[str, Any] | None = None) -> tuple[FastAPI, FakeState]:
    data = data or build_data()
    state = FakeState()
    app = FastAPI()
    install_recorder(app, state)

    @app.middleware("http")
    async def _auth(request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return Response(status_code=401)
        return await call_next(request)

    def paged(request: Request, rows: list[dict[str, Any]]) -> Response:
        params = request.query_params
        try:
            page = int(params.get("Page", "1"))
            limit = int(params.get("Limit", "50"))
        except ValueError:
            return problem({"Page": ["The value is not valid."]})
        if not 1 <= limit <= 250:
            return problem({"Limit": ["Limit must be between 1 and 250"]})
        total_pages = max(1, math.ceil(len(rows) / limit))
        chunk = rows[(page - 1) * limit : page * limit]
        headers = {
            "Page-Number": str(page),
            "Total-Pages": str(total_pages),
            "Total-Count": str(len(rows)),
            "Page-Size": str(limit),
        }
        return JSONResponse(chunk, headers=headers)

    def one(rows: list[dict[str, Any]], record_id: str) -> Response:
        for row in rows:
            if str(row["id"]) == record_id:
                return JSONResponse(row)
        return Response(status_code=404)

    @app.get("/order")
    def orders(request: Request) -> Response:
        rows = data["orders"]
        wanted = request.query_params.get("ReferenceIds")
        if wanted:
            refs = set(wanted.split(","))
            rows = [r for r in rows if r["reference_id"] in refs]
        return paged(request, rows)

    @app.get("/channel")
    def channels() -> Response:
        return JSONResponse({"items": CHANNELS, "next": None, "prev": None})

    counter = {"next": 0}

    def next_id(base: int) -> int:
        counter["next"] += 1
        return base + 90_000 + counter["next"]

    def now() -> str:
        return _ts(datetime.now(UTC))

    def channel(request: Request, scope: str) -> dict[str, Any] | Response:
        raw = request.headers.get("shipbob_channel_id")
        if not raw or not raw.isdigit():
            return problem({"shipbob_channel_id": ["The shipbob_channel_id header is required."]})
        found = next((c for c in CHANNELS if c["id"] == int(raw)), None)
        if found is None or scope not in found["scopes"]:
            return Response(status_code=403)
        return found

    @app.post("/order")
    async def create_order(request: Request) -> Response:
        found = channel(request, "orders_write")
        if isinstance(found, Response):
            return found
        body = await request.json()
        errors: dict[str, list[str]] = {}
        recipient = body.get("recipient") or {}
        address = recipient.get("address") or {}
        for field, value in (("ReferenceId", body.get("reference_id")),
                             ("ShippingMethod", body.get("shipping_method")),
                             ("Recipient.Name", recipient.get("name")),
                             ("Recipient.Address.Address1", address.get("address1")),
                             ("Recipient.Address.City", address.get("city")),
                             ("Recipient.Address.Country", address.get("country"))):  # fmt: skip
            if not value:
                errors[field] = [f"The {field.rsplit('.', 1)[-1]} field is required."]
        products = body.get("products") or []
        if not products:
            errors["Products"] = ["The Products field is required."]
        for n, line in enumerate(products):
            if not line.get("reference_id") and not line.get("id"):
                errors[f"Products[{n}].ReferenceId"] = ["The ReferenceId field is required."]
            if not isinstance(line.get("quantity"), int) or line["quantity"] < 1:
                errors[f"Products[{n}].Quantity"] = ["Quantity must be greater than 0."]
        if errors:
            return problem(errors)
        if any(o["reference_id"] == body["reference_id"] for o in data["orders"]):
            return problem(
                {"ReferenceId": [f"Order with reference id {body['reference_id']} already exists"]},
                status=422,
            )
        oid = next_id(200_000)
        lines = []
        for line in products:
            known = next((p for p in data["products"] if p["sku"] == line.get("reference_id")
                          or p["id"] == line.get("id")), None)  # fmt: skip
            price = line.get("unit_price", known["unit_price"] if known else None)
            lines.append({"id": known["id"] if known else next_id(600_000),
                          "reference_id": line.get("reference_id"), "quantity": line["quantity"],
                          "sku": known["sku"] if known else line.get("reference_id"),
                          "gtin": None, "upc": None, "unit_price": price,
                          "external_line_id": None})  # fmt: skip
        order = {
            "id": oid, "created_date": now(), "purchase_date": None,
            "reference_id": body["reference_id"], "order_number": body.get("order_number"),
            "status": "Processing", "type": body.get("type", "DTC"),
            "channel": {"id": found["id"], "name": found["name"]},
            "shipping_method": body["shipping_method"],
            "recipient": {"name": recipient["name"], "email": recipient.get("email"),
                          "phone_number": recipient.get("phone_number"), "address": address},
            "products": lines, "tags": body.get("tags") or [], "shipments": [],
            "financials": {"total_price": round(
                sum((x["unit_price"] or 0) * x["quantity"] for x in lines), 2)},
        }  # fmt: skip
        data["orders"].append(order)
        return JSONResponse(order, status_code=201)

    @app.post("/order/{record_id}:cancel")
    def cancel_order(record_id: str, request: Request) -> Response:
        found = channel(request, "orders_write")
        if isinstance(found, Response):
            return found
        order = next((o for o in data["orders"] if str(o["id"]) == record_id), None)
        if order is None:
            return Response(status_code=404)
        if order["status"] in ("Fulfilled", "Completed", "Cancelled"):
            return problem({"OrderId": [f"Order {record_id} in status {order['status']} "
                                        "cannot be cancelled"]}, status=422)  # fmt: skip
        order["status"] = "Cancelled"
        results = [{"action": "Cancel", "is_success": True, "reason": None, "shipment_id": s["id"]}
                   for s in order["shipments"]]  # fmt: skip
        return JSONResponse({"order_id": order["id"], "order": order, "status": "Success",
                             "canceled_shipment_results": results})  # fmt: skip

    @app.post("/return")
    async def create_return(request: Request) -> Response:
        found = channel(request, "returns_write")
        if isinstance(found, Response):
            return found
        body = await request.json()
        errors = {}
        reference = body.get("reference_id")
        if not reference or len(reference) > 50:
            errors["ReferenceId"] = ["The ReferenceId field is required (1-50 characters)."]
        center = (body.get("fulfillment_center") or {}).get("id")
        if center != FULFILLMENT_CENTER["id"]:
            errors["FulfillmentCenter.Id"] = ["Invalid fulfillment center."]
        inventory = body.get("inventory") or []
        if not inventory:
            errors["Inventory"] = ["The Inventory field is required."]
        ids = [line.get("id") for line in inventory]
        if len(set(ids)) != len(ids):
            errors["Inventory"] = ["Each inventory id may appear only once."]
        products = {p["id"]: p for p in data["products"]}
        for n, line in enumerate(inventory):
            if line.get("id") not in products:
                errors[f"Inventory[{n}].Id"] = [f"Inventory {line.get('id')} does not exist."]
            if not isinstance(line.get("quantity"), int) or line["quantity"] < 1:
                errors[f"Inventory[{n}].Quantity"] = ["Quantity must be greater than 0."]
        if errors:
            return problem(errors)
        if any(r["reference_id"] == reference for r in data["returns"]):
            return problem({"ReferenceId": ["A return with this reference id already exists."]},
                           status=422)  # fmt: skip
        shipment_id = body.get("original_shipment_id")
        order = next((o for o in data["orders"]
                      if any(s["id"] == shipment_id for s in o["shipments"])), None)  # fmt: skip
        record = {
            "id": next_id(300_000), "reference_id": reference, "status": "AwaitingArrival",
            "return_type": "Regular", "store_order_id": order["reference_id"] if order else None,
            "customer_name": "Acme Store", "tracking_number": body.get("tracking_number"),
            "original_shipment_id": shipment_id, "insert_date": now(), "completed_date": None,
            "invoice_amount": None, "channel": {"id": found["id"], "name": found["name"]},
            "fulfillment_center": FULFILLMENT_CENTER,
            "inventory": [
                {"id": line["id"], "name": products[line["id"]]["name"],
                 "quantity": line["quantity"],
                 "action_requested": {"action": line.get("requested_action", "Default"),
                                      "action_type": "InventoryDefault", "instructions": None},
                 "action_taken": []}
                for line in inventory
            ],
            "transactions": [],
        }  # fmt: skip
        data["returns"].append(record)
        return JSONResponse(record, status_code=201)

    @app.get("/order/{record_id}")
    def order(record_id: str) -> Response:
        return one(data["orders"], record_id)

    @app.get("/return")
    def returns(request: Request) -> Response:
        wanted = request.query_params.get("Status")
        rows = data["returns"]
        if wanted:
            statuses = set(wanted.split(","))
            unknown = statuses - set(RETURN_STATUSES)
            if unknown:
                return problem({"Status": [f"The value '{sorted(unknown)[0]}' is not valid."]})
            rows = [r for r in rows if r["status"] in statuses]
        return paged(request, rows)

    @app.get("/return/{record_id}")
    def return_(record_id: str) -> Response:
        return one(data["returns"], record_id)

    @app.get("/product")
    def products(request: Request) -> Response:
        return paged(request, data["products"])

    @app.get("/product/{record_id}")
    def product(record_id: str) -> Response:
        return one(data["products"], record_id)

    return app, state
