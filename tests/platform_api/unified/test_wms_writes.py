"""Create, update and delete through the unified WMS resources, checked in the provider.

Each test goes through the HTTP API, checks the unified answer against the schema, and
compares it with what the provider fake received and now stores.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from platform_api.unified.schemas import validate_record
from tests.assertions import assert_error
from tests.platform_api.unified.conftest import Upstream, UpstreamFor
from tests.platform_api.unified.providers import SANDBOX, SHIPBOB, SHOPIFY, Provider

pytestmark = pytest.mark.db

ADDRESS = {"name": "Ada Lovelace", "address1": "12 St James's Square", "city": "London",
           "zip_code": "SW1Y 4JH", "country": "GB"}  # fmt: skip


class Api:
    """The unified WMS API of one account, as a client would call it."""

    def __init__(self, client: TestClient, headers: dict[str, str], upstream: Upstream) -> None:
        self.client, self.headers, self.upstream = client, headers, upstream
        self.params = {"integrated_account_id": upstream.account_id}

    def url(self, resource: str, record_id: str | None = None) -> str:
        base = f"/v1/unified/wms/{resource}"
        return f"{base}/{record_id}" if record_id else base

    def create(self, resource: str, body: dict[str, Any]) -> Response:
        return self.client.post(
            self.url(resource), params=self.params, json=body, headers=self.headers
        )

    def update(self, resource: str, record_id: str, body: dict[str, Any]) -> Response:
        return self.client.patch(
            self.url(resource, record_id), params=self.params, json=body, headers=self.headers
        )

    def delete(self, resource: str, record_id: str) -> Response:
        return self.client.delete(
            self.url(resource, record_id), params=self.params, headers=self.headers
        )

    def get(self, resource: str, record_id: str) -> Response:
        return self.client.get(
            self.url(resource, record_id), params=self.params, headers=self.headers
        )

    def record(self, response: Response, resource: str, status: int) -> dict[str, Any]:
        """The unified record of a successful answer, checked against its schema."""
        assert response.status_code == status, response.text
        record = response.json()
        assert validate_record("wms", resource, record) == record
        return record

    def sent(self, method: str, path: str) -> list[dict[str, Any]]:
        """Requests the provider received with this method and exact path."""
        return [
            r for r in self.upstream.state.requests if r["method"] == method and r["path"] == path
        ]


ApiFor = Callable[[Provider], Api]


@pytest.fixture
def api_for(client: TestClient, auth_headers: dict[str, str], upstream_for: UpstreamFor) -> ApiFor:
    return lambda provider: Api(client, auth_headers, upstream_for(provider))


# --- sandbox ---------------------------------------------------------------------------------
def test_sandbox_order_create_update_delete(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    store = api.upstream.data
    product = store.products["prod_1001"]
    body = {"order_number": "WEB-1", "customer_name": "Ada Lovelace",
            "customer_email": "ada@example.com", "currency": "EUR",
            "line_items": [{"product_id": "prod_1001", "quantity": 2}]}  # fmt: skip

    created = api.record(api.create("orders", body), "orders", 201)
    stored = store.orders[created["id"]]
    assert stored["number"] == "WEB-1" and stored["state"] == "PENDING"
    assert stored["buyer"] == {"name": "Ada Lovelace", "email": "ada@example.com"}
    assert stored["lines"][0]["qty"] == 2
    assert stored["total_cents"] == 2 * product["price_cents"]
    assert created["status"] == "pending" and created["order_number"] == "WEB-1"
    assert created["total_amount"] == stored["total_cents"] / 100
    assert created["line_items"] == [{"product_id": "prod_1001", "sku": product["sku"],
                                      "name": product["title"], "quantity": 2,
                                      "unit_price": product["price_cents"] / 100}]  # fmt: skip
    assert api.get("orders", created["id"]).json() == created

    updated = api.record(
        api.update("orders", created["id"], {"status": "on_hold", "customer_email": "a@l.example"}),
        "orders",
        200,
    )
    assert json.loads(api.sent("PATCH", f"/store/orders/{created['id']}")[0]["body"]) == {
        "state": "ON_HOLD", "buyer": {"email": "a@l.example"}
    }  # fmt: skip
    assert stored["state"] == "ON_HOLD" and stored["buyer"]["name"] == "Ada Lovelace"
    assert (updated["status"], updated["customer_email"]) == ("on_hold", "a@l.example")
    assert (
        updated["customer_name"] == "Ada Lovelace"
        and updated["line_items"] == created["line_items"]
    )

    deleted = api.delete("orders", created["id"])
    assert deleted.status_code == 204 and deleted.content == b""
    assert created["id"] not in store.orders
    assert_error(api.get("orders", created["id"]), 404, "NOT_FOUND")


def test_sandbox_order_refused_by_the_store_keeps_its_message(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    before = len(api.upstream.data.orders)
    one = [{"product_id": "prod_1001", "quantity": 1}]
    response = api.create("orders", {"customer_name": "No Email", "line_items": one})
    assert assert_error(response, 400, "INVALID_REQUEST")["message"] == "buyer.email is required"
    unknown = [{"product_id": "prod_nope", "quantity": 1}]
    response = api.create("orders", {"customer_email": "x@example.com", "line_items": unknown})
    assert "no product prod_nope" in assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert len(api.upstream.data.orders) == before


def test_sandbox_return_create_update_delete(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    store = api.upstream.data
    order = store.orders["ord_5002"]
    line = order["lines"][0]
    body = {"order_id": "ord_5002", "reason": "damaged", "tracking_number": "1ZNEW0001",
            "carrier": "UPS",
            "line_items": [{"product_id": line["product_id"], "quantity": 1}]}  # fmt: skip

    created = api.record(api.create("returns", body), "returns", 201)
    stored = store.returns[created["id"]]
    assert (stored["order_id"], stored["state"], stored["reason_code"]) == (
        "ord_5002", "REQUESTED", "DAMAGED"
    )  # fmt: skip
    assert stored["lines"] == [{"product_id": line["product_id"], "qty": 1,
                                "reason_code": "DAMAGED"}]  # fmt: skip
    assert created["status"] == "requested" and created["reason"] == "damaged"
    assert (created["tracking_number"], created["carrier"]) == ("1ZNEW0001", "UPS")
    # The SKU is not in the sandbox's answer: the after-step looked it up.
    assert created["line_items"] == [{"product_id": line["product_id"], "sku": line["sku"],
                                      "quantity": 1, "reason": "damaged"}]  # fmt: skip
    assert created["refund_amount"] is None and created["currency"] == order["currency"]
    assert api.get("returns", created["id"]).json() == created

    updated = api.record(
        api.update("returns", created["id"], {"status": "open", "tracking_number": "1ZNEW0002"}),
        "returns",
        200,
    )
    assert stored["state"] == "AUTHORIZED"
    assert stored["shipment"] == {"tracking": "1ZNEW0002", "carrier": "UPS"}
    assert (updated["status"], updated["tracking_number"], updated["carrier"]) == (
        "open", "1ZNEW0002", "UPS"
    )  # fmt: skip

    assert api.delete("returns", created["id"]).status_code == 204
    assert created["id"] not in store.returns
    assert_error(api.get("returns", created["id"]), 404, "NOT_FOUND")


def test_sandbox_return_for_an_unknown_order_is_refused(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    response = api.create("returns", {"order_id": "ord_0", "line_items": [
        {"product_id": "prod_1001", "quantity": 1}]})  # fmt: skip
    assert "no order ord_0" in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_sandbox_product_create_update_delete(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    store = api.upstream.data
    body = {"sku": "SBX-NEW-1", "name": "Cedar Mug", "description": "Stoneware.",
            "price": 19.5, "quantity_available": 5}  # fmt: skip

    created = api.record(api.create("products", body), "products", 201)
    stored = store.products[created["id"]]
    assert json.loads(api.sent("POST", "/store/products")[0]["body"]) == {
        "sku": "SBX-NEW-1", "title": "Cedar Mug", "description": "Stoneware.",
        "price_cents": 1950, "stock": 5,
    }  # fmt: skip
    assert {k: created[k] for k in body} == body
    assert stored["price_cents"] == 1950

    updated = api.record(api.update("products", created["id"], {"price": 21}), "products", 200)
    assert stored["price_cents"] == 2100 and stored["title"] == "Cedar Mug"
    assert updated["price"] == 21.0 and updated["name"] == "Cedar Mug"

    assert api.delete("products", created["id"]).status_code == 204
    assert created["id"] not in store.products
    assert_error(api.get("products", created["id"]), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "field"),
    [({"name": "Mug", "price": "19.50"}, "price"), ({"name": "Mug", "price": -1}, "price"),
     ({"name": "Mug", "price": 2e9}, "price"),
     ({"name": "Mug", "quantity_available": True}, "quantity_available")],
)  # fmt: skip
def test_sandbox_product_input_is_checked_before_the_provider_is_called(
    api_for: ApiFor, body: dict[str, Any], field: str
) -> None:
    api = api_for(SANDBOX)
    response = api.create("products", body)
    assert field in assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert api.sent("POST", "/store/products") == []


def test_a_null_field_is_left_as_it_is(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    stored = api.upstream.data.products["prod_1001"]
    price = stored["price_cents"]
    body = {"name": "Renamed", "price": None, "sku": None}
    updated = api.record(api.update("products", "prod_1001", body), "products", 200)
    assert updated["name"] == "Renamed" and stored["price_cents"] == price
    assert json.loads(api.sent("PATCH", "/store/products/prod_1001")[0]["body"]) == {
        "title": "Renamed"
    }


def test_a_proxy_path_a_url_cannot_carry_is_encoded_not_refused(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    response = api.client.get("/v1/proxy/store/orders/ord%01x%20y", params=api.params,
                              headers=api.headers)  # fmt: skip
    assert_error(response, 404, "NOT_FOUND")
    [seen] = [r for r in api.upstream.state.requests if r["path"].startswith("/store/orders/")]
    assert seen["path"] == "/store/orders/ord\u0001x y"  # the provider decoded what was sent


def test_sandbox_product_without_a_name_is_refused(api_for: ApiFor) -> None:
    api = api_for(SANDBOX)
    response = api.create("products", {"sku": "X", "price": 3})
    assert assert_error(response, 400, "INVALID_REQUEST")["message"] == "title is required"


# --- Shopify ---------------------------------------------------------------------------------
def test_shopify_order_create_update_delete(api_for: ApiFor) -> None:
    api = api_for(SHOPIFY)
    data = api.upstream.data
    product = data["products"][1]
    variant = product["variants"][0]
    body = {"customer_name": "Ada Lovelace", "customer_email": "ada@example.com",
            "currency": "USD", "shipping_address": ADDRESS,
            "line_items": [{"product_id": str(product["id"]), "quantity": 2},
                           {"name": "Gift wrap", "sku": "WRAP", "quantity": 1,
                            "unit_price": 4.5}]}  # fmt: skip

    created = api.record(api.create("orders", body), "orders", 201)
    sent = json.loads(api.sent("POST", "/orders.json")[0]["body"])["order"]
    assert sent["line_items"] == [
        {"variant_id": variant["id"], "quantity": 2},
        {"title": "Gift wrap", "sku": "WRAP", "quantity": 1, "price": "4.5"},
    ]
    assert sent["customer"] == {"first_name": "Ada", "last_name": "Lovelace"}
    assert sent["shipping_address"]["country_code"] == "GB"
    stored = next(o for o in data["orders"] if str(o["id"]) == created["id"])
    assert created["order_number"] == stored["name"] and created["status"] == "processing"
    assert created["customer_name"] == "Ada Lovelace"
    assert created["customer_email"] == "ada@example.com"
    assert created["line_items"][0] == {"product_id": str(product["id"]), "sku": variant["sku"],
                                        "name": product["title"], "quantity": 2,
                                        "unit_price": float(variant["price"])}  # fmt: skip
    assert created["line_items"][1]["product_id"] is None
    assert (
        created["total_amount"]
        == float(stored["total_price"])
        == round(2 * float(variant["price"]) + 4.5, 2)
    )
    assert api.get("orders", created["id"]).json() == created

    updated = api.record(
        api.update("orders", created["id"], {"customer_email": "ada.l@example.com"}), "orders", 200
    )
    put = json.loads(api.sent("PUT", f"/orders/{created['id']}.json")[0]["body"])
    assert put == {"order": {"id": int(created["id"]), "email": "ada.l@example.com"}}
    assert stored["email"] == updated["customer_email"] == "ada.l@example.com"
    assert updated["line_items"] == created["line_items"]

    assert api.delete("orders", created["id"]).status_code == 204
    assert all(str(o["id"]) != created["id"] for o in data["orders"])
    assert_error(api.get("orders", created["id"]), 404, "NOT_FOUND")


def test_shopify_order_fields_shopify_cannot_change_are_refused_before_the_call(
    api_for: ApiFor,
) -> None:
    api = api_for(SHOPIFY)
    order_id = str(api.upstream.data["orders"][0]["id"])
    response = api.update("orders", order_id, {"line_items": [{"sku": "X", "quantity": 1}]})
    assert (
        "only customer_email and shipping_address"
        in assert_error(response, 400, "INVALID_REQUEST")["message"]
    )
    assert api.sent("PUT", f"/orders/{order_id}.json") == []


def test_shopify_order_without_line_items_keeps_shopifys_message(api_for: ApiFor) -> None:
    api = api_for(SHOPIFY)
    response = api.create("orders", {"customer_email": "ada@example.com"})
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert body["message"] == "line_items can't be blank"
    assert len(api.sent("POST", "/orders.json")) == 1


def test_shopify_product_create_update_delete(api_for: ApiFor) -> None:
    api = api_for(SHOPIFY)
    data = api.upstream.data
    body = {"sku": "ACME-NEW", "name": "Trail Beanie", "description": "<p>Warm.</p>",
            "price": 12.5}  # fmt: skip

    created = api.record(api.create("products", body), "products", 201)
    assert json.loads(api.sent("POST", "/products.json")[0]["body"]) == {"product": {
        "title": "Trail Beanie", "body_html": "<p>Warm.</p>",
        "variants": [{"sku": "ACME-NEW", "price": "12.5"}]}}  # fmt: skip
    stored = next(p for p in data["products"] if str(p["id"]) == created["id"])
    assert {k: created[k] for k in body} == body
    assert stored["variants"][0]["price"] == "12.50" and created["quantity_available"] == 0

    updated = api.record(
        api.update("products", created["id"], {"price": 14, "name": "Trail Beanie II"}),
        "products",
        200,
    )
    put = json.loads(api.sent("PUT", f"/products/{created['id']}.json")[0]["body"])["product"]
    variant_id = stored["variants"][0]["id"]
    assert put["variants"] == [{"id": variant_id, "price": "14"}]
    assert len(stored["variants"]) == 1 and stored["variants"][0]["price"] == "14.00"
    assert (updated["name"], updated["price"], updated["sku"]) == ("Trail Beanie II", 14.0,
                                                                    "ACME-NEW")  # fmt: skip

    assert api.delete("products", created["id"]).status_code == 204
    assert all(str(p["id"]) != created["id"] for p in data["products"])
    assert_error(api.get("products", created["id"]), 404, "NOT_FOUND")


def test_shopify_product_without_a_title_keeps_shopifys_message(api_for: ApiFor) -> None:
    api = api_for(SHOPIFY)
    response = api.create("products", {"sku": "ACME-X", "price": 3})
    assert assert_error(response, 400, "INVALID_REQUEST")["message"] == "title can't be blank"


def test_shopify_update_of_a_missing_product_is_not_found(api_for: ApiFor) -> None:
    api = api_for(SHOPIFY)
    assert_error(api.update("products", "1", {"name": "Ghost"}), 404, "NOT_FOUND")
    assert api.sent("PUT", "/products/1.json") == []


# --- ShipBob ---------------------------------------------------------------------------------
def test_shipbob_order_create_and_cancel(api_for: ApiFor) -> None:
    api = api_for(SHIPBOB)
    data = api.upstream.data
    product = data["products"][1]
    body = {"order_number": "WEB-77", "customer_name": "Ada Lovelace",
            "customer_email": "ada@example.com", "shipping_address": ADDRESS,
            "line_items": [{"sku": product["sku"], "name": product["name"], "quantity": 2,
                            "unit_price": 12.5}]}  # fmt: skip

    created = api.record(api.create("orders", body), "orders", 201)
    post = api.sent("POST", "/order")[0]
    assert post["headers"]["shipbob_channel_id"] == "100102"  # the channel with orders_write
    sent = json.loads(post["body"])
    assert (sent["reference_id"], sent["shipping_method"]) == ("WEB-77", "Standard")
    assert sent["recipient"]["address"] == {"address1": ADDRESS["address1"], "city": "London",
                                            "zip_code": "SW1Y 4JH", "country": "GB"}  # fmt: skip
    stored = next(o for o in data["orders"] if str(o["id"]) == created["id"])
    assert stored["products"][0]["id"] == product["id"]  # matched by SKU (reference_id)
    assert created["status"] == "processing" and created["order_number"] == "WEB-77"
    assert created["customer_email"] == "ada@example.com"
    assert created["line_items"] == [{"product_id": str(product["id"]), "sku": product["sku"],
                                      "name": None, "quantity": 2, "unit_price": 12.5}]  # fmt: skip
    assert created["total_amount"] == 25.0
    assert api.get("orders", created["id"]).json() == created

    cancelled = api.delete("orders", created["id"])
    assert cancelled.status_code == 204 and cancelled.content == b""
    assert len(api.sent("POST", f"/order/{created['id']}:cancel")) == 1
    assert stored["status"] == "Cancelled"
    assert api.get("orders", created["id"]).json()["status"] == "cancelled"


def test_shipbob_order_without_an_address_keeps_shipbobs_message(api_for: ApiFor) -> None:
    api = api_for(SHIPBOB)
    lines = [{"sku": "WID-001", "quantity": 1}]
    response = api.create(
        "orders", {"order_number": "WEB-78", "customer_name": "Ada", "line_items": lines}
    )
    message = assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert message.startswith("One or more validation errors occurred.")
    assert "Recipient.Address.Address1: The Address1 field is required." in message


def test_shipbob_cancel_of_a_fulfilled_order_is_refused(api_for: ApiFor) -> None:
    api = api_for(SHIPBOB)
    order = next(o for o in api.upstream.data["orders"] if o["status"] == "Fulfilled")
    response = api.delete("orders", str(order["id"]))
    assert "cannot be cancelled" in assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert order["status"] == "Fulfilled"


def test_shipbob_return_create(api_for: ApiFor) -> None:
    api = api_for(SHIPBOB)
    data = api.upstream.data
    order = data["orders"][90]  # no return yet
    line = order["products"][0]
    body = {"order_id": order["reference_id"], "tracking_number": "1ZRETURN1",
            "line_items": [{"product_id": str(line["id"]), "quantity": 1}]}  # fmt: skip

    created = api.record(api.create("returns", body), "returns", 201)
    post = api.sent("POST", "/return")[0]
    assert post["headers"]["shipbob_channel_id"] == "100102"
    sent = json.loads(post["body"])
    assert sent["reference_id"].startswith(f"{order['reference_id']}-RMA-")
    assert sent["original_shipment_id"] == order["shipments"][0]["id"]
    assert sent["fulfillment_center"] == {"id": order["shipments"][0]["location"]["id"]}
    assert sent["inventory"] == [{"id": line["id"], "quantity": 1, "requested_action": "Default"}]
    stored = next(r for r in data["returns"] if str(r["id"]) == created["id"])
    assert stored["store_order_id"] == order["reference_id"]
    assert created["order_id"] == order["reference_id"] and created["status"] == "open"
    assert created["line_items"] == [{"product_id": str(line["id"]), "sku": None,
                                      "quantity": 1, "reason": None}]  # fmt: skip
    assert created["tracking_number"] == "1ZRETURN1" and created["refund_amount"] is None
    assert api.get("returns", created["id"]).json() == created


def test_shipbob_return_for_an_unknown_order_is_refused_before_the_call(api_for: ApiFor) -> None:
    api = api_for(SHIPBOB)
    lines = [{"product_id": "600001", "quantity": 1}]
    response = api.create("returns", {"order_id": "store-none", "line_items": lines})
    assert "no shipped order" in assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert api.sent("POST", "/return") == []


def test_shipbob_order_update_is_not_offered(api_for: ApiFor) -> None:
    api = api_for(SHIPBOB)
    order_id = str(api.upstream.data["orders"][0]["id"])
    assert_error(api.update("orders", order_id, {"customer_email": "x@example.com"}), 405,
                 "METHOD_NOT_ALLOWED")  # fmt: skip


def test_write_with_skip_api_call_answers_mock_data_without_calling(api_for: ApiFor) -> None:
    api = api_for(SHIPBOB)
    response = api.client.post(
        api.url("orders"),
        params={**api.params, "skip_api_call": "true"},
        json={"order_number": "WEB-79"},
        headers=api.headers,
    )
    record = api.record(response, "orders", 201)
    assert record["id"] == "200001"  # the manifest's mock order
    assert api.upstream.state.requests == []
