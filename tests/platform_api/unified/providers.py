"""Each provider under test: its fake, credentials, raw records, and an independent oracle.

The oracle re-derives the unified fields from the provider payload in plain Python (not with
the manifest's JSONata), so a test compares the engine's output with the record it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from fastapi import FastAPI

from sandbox import app as sandbox_app
from sandbox import data as sandbox_data
from tests.platform_api.unified.fakes import hubspot, pipedrive, shipbob, shopify
from tests.platform_api.unified.fakes.common import FakeState, install_recorder


def ts(value: str) -> str:
    """A provider timestamp as the unified API shows it (UTC, ``Z``)."""
    value = value.replace(" ", "T")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat().replace("+00:00", "Z")


def money(value: Any) -> float:
    return float(Decimal(str(value)))


SHOPIFY_RETURN_STATUS = {
    "REQUESTED": "requested", "OPEN": "open", "CLOSED": "completed", "DECLINED": "declined",
    "CANCELED": "cancelled",
}  # fmt: skip
SHIPBOB_ORDER_STATUS = {
    "Processing": "processing", "Exception": "on_hold", "PartiallyFulfilled": "partially_fulfilled",
    "Fulfilled": "fulfilled", "Cancelled": "cancelled",
}  # fmt: skip
SANDBOX_ORDER_STATUS = {
    "PENDING": "pending", "PROCESSING": "processing", "ON_HOLD": "on_hold",
    "PARTIALLY_SHIPPED": "partially_fulfilled", "SHIPPED": "fulfilled", "CANCELLED": "cancelled",
}  # fmt: skip


@dataclass
class Provider:
    integration: str
    category: str
    credentials: dict[str, str]
    build: Callable[[], Any]
    serve: Callable[[Any], tuple[FastAPI, FakeState]]
    raw: Callable[[Any, str], list[dict[str, Any]]]
    check: Callable[[str, dict[str, Any], dict[str, Any]], None]
    resources: tuple[str, ...]


# --- Shopify --------------------------------------------------------------------------------
def shopify_order_status(raw: dict[str, Any]) -> str:
    """The unified status a Shopify order should get, derived here in plain Python."""
    if raw["cancelled_at"]:
        return "cancelled"
    fulfillment = raw["fulfillment_status"]
    if fulfillment in ("fulfilled", "partial"):
        return {"fulfilled": "fulfilled", "partial": "partially_fulfilled"}[fulfillment]
    return "pending" if raw["financial_status"] == "pending" else "processing"


def _shopify_check(resource: str, raw: dict[str, Any], out: dict[str, Any]) -> None:
    if resource == "orders":
        assert out["id"] == str(raw["id"]) and out["order_number"] == raw["name"]
        assert out["status"] == shopify_order_status(raw)
        assert out["total_amount"] == money(raw["total_price"])
        assert out["currency"] == raw["currency"]
        assert [i["sku"] for i in out["line_items"]] == [i["sku"] for i in raw["line_items"]]
        assert out["created_at"] == ts(raw["created_at"])
    elif resource == "products":
        assert out["id"] == str(raw["id"]) and out["name"] == raw["title"]
        assert out["sku"] == raw["variants"][0]["sku"]
        assert out["price"] == money(raw["variants"][0]["price"])
    elif resource == "returns":
        assert out["id"] == raw["id"].rsplit("/", 1)[1]
        assert out["order_id"] == raw["order"]["id"].rsplit("/", 1)[1]
        assert out["status"] == SHOPIFY_RETURN_STATUS[raw["status"]]
        line = raw["returnLineItems"]["nodes"][0]
        assert out["reason"] == line["returnReason"].lower()
        assert out["line_items"][0]["sku"] == line["fulfillmentLineItem"]["lineItem"]["sku"]
        refunds = raw["refunds"]["nodes"]
        if refunds:
            assert out["refund_amount"] == money(
                refunds[0]["totalRefundedSet"]["shopMoney"]["amount"]
            )
        else:
            assert out["refund_amount"] is None
        tracking = raw["reverseFulfillmentOrders"]["nodes"][0]["reverseDeliveries"]["nodes"][0]
        assert out["tracking_number"] == tracking["deliverable"]["tracking"]["number"]


def _serve_fake(module: Any) -> Callable[[Any], tuple[FastAPI, FakeState]]:
    return lambda data: module.create_app(data)


SHOPIFY = Provider(
    integration="shopify",
    category="wms",
    credentials={"shop": "acme", "access_token": shopify.TOKEN},
    build=shopify.build_data,
    serve=_serve_fake(shopify),
    raw=lambda data, resource: data[resource],
    check=_shopify_check,
    resources=("orders", "returns", "products"),
)


# --- ShipBob --------------------------------------------------------------------------------
def _shipbob_check(resource: str, raw: dict[str, Any], out: dict[str, Any]) -> None:
    assert out["id"] == str(raw["id"])
    if resource == "orders":
        assert out["status"] == SHIPBOB_ORDER_STATUS[raw["status"]]
        assert out["customer_email"] == raw["recipient"]["email"]
        assert out["total_amount"] == money(raw["financials"]["total_price"])
        assert [i["sku"] for i in out["line_items"]] == [p["sku"] for p in raw["products"]]
        assert out["created_at"] == ts(raw["created_date"])
    elif resource == "returns":
        assert out["order_id"] == raw["store_order_id"]
        assert out["status"] == {"AwaitingArrival": "open", "Arrived": "received",
                                 "Processing": "processing", "Completed": "completed",
                                 "Cancelled": "cancelled"}[raw["status"]]  # fmt: skip
        assert out["tracking_number"] == raw["tracking_number"]
        assert [i["quantity"] for i in out["line_items"]] == [
            i["quantity"] for i in raw["inventory"]
        ]
        assert out["refund_amount"] is None
    elif resource == "products":
        assert out["sku"] == raw["sku"] and out["name"] == raw["name"]
        assert out["price"] == money(raw["unit_price"])
        assert out["quantity_available"] == raw["total_fulfillable_quantity"]


SHIPBOB = Provider(
    integration="shipbob",
    category="wms",
    credentials={"access_token": shipbob.TOKEN},
    build=shipbob.build_data,
    serve=_serve_fake(shipbob),
    raw=lambda data, resource: data[resource],
    check=_shipbob_check,
    resources=("orders", "returns", "products"),
)


# --- HubSpot --------------------------------------------------------------------------------
def _hubspot_check(resource: str, raw: dict[str, Any], out: dict[str, Any]) -> None:
    props = raw["properties"]
    assert out["id"] == raw["id"]
    assert out["created_at"] == ts(raw["createdAt"])
    if resource == "contacts":
        assert (out["first_name"], out["last_name"]) == (props["firstname"], props["lastname"])
        assert out["email"] == props["email"] and out["phone"] == props["phone"]
        assert out["company_id"] == props["associatedcompanyid"]
    else:
        assert (out["name"], out["domain"]) == (props["name"], props["domain"])
        assert (out["city"], out["country"]) == (props["city"], props["country"])


HUBSPOT = Provider(
    integration="hubspot",
    category="crm",
    credentials={"access_token": hubspot.TOKEN},
    build=hubspot.build_data,
    serve=_serve_fake(hubspot),
    raw=lambda data, resource: list(data[resource].values()),
    check=_hubspot_check,
    resources=("contacts", "companies"),
)


# --- Pipedrive ------------------------------------------------------------------------------
def _pipedrive_check(resource: str, raw: dict[str, Any], out: dict[str, Any]) -> None:
    assert out["id"] == str(raw["id"])
    assert out["created_at"] == ts(raw["add_time"])
    if resource == "contacts":
        assert (out["first_name"], out["last_name"]) == (raw["first_name"], raw["last_name"])
        assert out["email"] == raw["email"][0]["value"]
        assert out["phone"] == raw["phone"][0]["value"]
        assert out["company_id"] == (str(raw["org_id"]["value"]) if raw["org_id"] else None)
    else:
        assert out["name"] == raw["name"]
        assert (out["city"], out["country"]) == (raw["address_locality"], raw["address_country"])


PIPEDRIVE = Provider(
    integration="pipedrive",
    category="crm",
    credentials={"api_token": pipedrive.TOKEN},
    build=pipedrive.build_data,
    serve=_serve_fake(pipedrive),
    raw=lambda data, resource: list(
        data["persons" if resource == "contacts" else "organizations"].values()
    ),
    check=_pipedrive_check,
    resources=("contacts", "companies"),
)


# --- Sandbox (the upstream that ships with the project) -------------------------------------
def _serve_sandbox(data: Any) -> tuple[FastAPI, FakeState]:
    app = sandbox_app.create_app(data)
    state = FakeState()
    install_recorder(app, state)
    return app, state


def _sandbox_check(resource: str, raw: dict[str, Any], out: dict[str, Any]) -> None:
    assert out["id"] == raw["id"]
    assert out["created_at"] == ts(raw["created"])
    if resource == "orders":
        assert out["order_number"] == raw["number"]
        assert out["status"] == SANDBOX_ORDER_STATUS[raw["state"]]
        assert out["total_amount"] == raw["total_cents"] / 100
        assert out["customer_email"] == raw["buyer"]["email"]
    elif resource == "returns":
        assert out["order_id"] == raw["order_id"]
        assert out["status"] == {"REQUESTED": "requested", "AUTHORIZED": "open",
                                 "RECEIVED": "received", "INSPECTING": "processing",
                                 "REFUNDED": "completed", "REJECTED": "declined",
                                 "CANCELLED": "cancelled"}[raw["state"]]  # fmt: skip
        assert out["reason"] == raw["reason_code"].lower()
        cents = raw["refund"]["amount_cents"]
        assert out["refund_amount"] == (cents / 100 if cents is not None else None)
        assert out["tracking_number"] == raw["shipment"]["tracking"]
        assert out["carrier"] == raw["shipment"]["carrier"]
        # The SKU is not in the return payload: the after-step looked it up.
        assert [i["product_id"] for i in out["line_items"]] == [
            line["product_id"] for line in raw["lines"]
        ]
        assert all(i["sku"] == "SBX-" + i["product_id"].split("_")[1] for i in out["line_items"])
    elif resource == "products":
        assert out["sku"] == raw["sku"] and out["price"] == raw["price_cents"] / 100
    elif resource == "contacts":
        assert (out["first_name"], out["email"]) == (raw["given_name"], raw["email"])
        assert out["company_id"] == raw["company_id"]
    elif resource == "companies":
        assert (out["name"], out["domain"]) == (raw["name"], raw["website"])


def _sandbox_raw(data: Any, resource: str) -> list[dict[str, Any]]:
    return list(getattr(data, resource).values())


SANDBOX = Provider(
    integration="sandbox",
    category="wms",
    credentials={"api_key": sandbox_app.DEMO_KEY},
    build=sandbox_data.seed,
    serve=_serve_sandbox,
    raw=_sandbox_raw,
    check=_sandbox_check,
    resources=("orders", "returns", "products"),
)
SANDBOX_CRM = Provider(
    integration="sandbox_crm",
    category="crm",
    credentials={"api_key": sandbox_app.DEMO_KEY},
    build=sandbox_data.seed,
    serve=_serve_sandbox,
    raw=_sandbox_raw,
    check=_sandbox_check,
    resources=("contacts", "companies"),
)

PROVIDERS = [SHOPIFY, SHIPBOB, SANDBOX, HUBSPOT, PIPEDRIVE, SANDBOX_CRM]
BY_NAME = {p.integration: p for p in PROVIDERS}
