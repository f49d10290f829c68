"""A faithful local ShipBob API subset (orders, returns, products).

Lists are bare JSON arrays paged by ``Page``/``Limit`` (Limit at most 250) with the
``Page-Number``, ``Total-Pages``, ``Total-Count`` and ``Page-Size`` response headers; returns
filter by a comma-separated ``Status``. Auth: ``Authorization: Bearer <token>``; a bad token is
a bare 401. Validation errors are ASP.NET problem details; 429 carries ``x-retry-after``
and ``{"statusCode": 429, "message": ...}``.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from tests.platform_api.unified.fakes.common import FakeState, install_recorder

TOKEN = "shipbob_pat_fake"
EPOCH = datetime(2025, 4, 1, 8, 0, tzinfo=UTC)
ORDER_STATUSES = ["Processing", "Exception", "PartiallyFulfilled", "Fulfilled", "Cancelled"]
RETURN_STATUSES = ["AwaitingArrival", "Arrived", "Processing", "Completed", "Cancelled"]


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000+00:00")


def problem(errors: dict[str, list[str]]) -> JSONResponse:
    return JSONResponse(
        {
            "type": "https://tools.ietf.org/html/rfc7231#section-6.5.1",
            "title": "One or more validation errors occurred.",
            "status": 400,
            "errors": errors,
        },
        status_code=400,
    )


def build_data(orders: int = 140, returns: int = 75, products: int = 55, seed: int = 5) -> dict:
    rng = random.Random(seed)
    product_rows = [
        {"id": 600_000 + i, "reference_id": f"ref-{i}", "name": f"Widget {i}",
         "sku": f"WID-{i:03d}", "barcode": f"0{i:011d}", "gtin": None, "upc": None,
         "unit_price": round(rng.uniform(3, 80), 2),
         "created_date": _ts(EPOCH + timedelta(hours=i)),
         "channel": {"id": 100, "name": "Acme Store"},
         "total_fulfillable_quantity": rng.randrange(0, 500), "total_onhand_quantity": 0,
         "total_committed_quantity": 0}
        for i in range(products)
    ]  # fmt: skip
    order_rows = []
    for i in range(orders):
        created = EPOCH + timedelta(hours=3 * i)
        lines = [
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
            "products": lines, "tags": [], "shipments": [],
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
    async def _auth(request: Request, call_next):  # type: ignore[no-untyped-def]
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
        return paged(request, data["orders"])

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
