"""Unified record schemas, one per resource; every mapping's output is validated against them.

Conventions: ids are strings; timestamps are ISO 8601 in UTC; money is a decimal number in
major currency units (12.5 means 12.50 in ``currency``); enumerations are lower-case.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    TypeAdapter,
    WithJsonSchema,
)

# JSON numbers, not strings: the contract shows refund_amount as a number. A float, not a
# Decimal: records leave as JSON numbers either way, and a Decimal costs a conversion each
# way on every amount of every page.
Money = Annotated[float, Field(allow_inf_nan=False)]


MAX_AMOUNT = 1_000_000_000
MAX_QUANTITY = 1_000_000


def _a_number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError("must be a number")
    return value


# What a caller sends: a JSON number (as documented), never a string; bounded.
MoneyInput = Annotated[
    Money,
    BeforeValidator(_a_number),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": MAX_AMOUNT}),
    Field(allow_inf_nan=False, ge=0, le=MAX_AMOUNT),
]
# Counts a caller may send (a provider's own numbers are not bounded here).
Quantity = Annotated[StrictInt, Field(ge=1, le=MAX_QUANTITY)]


def _utc(value: datetime) -> datetime:
    # Providers answer in their shop's offset; the unified API speaks UTC only.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


Timestamp = Annotated[datetime, AfterValidator(_utc)]

ReturnStatus = Literal[
    "requested", "open", "received", "processing", "completed", "declined", "cancelled"
]
RETURN_STATUSES: tuple[str, ...] = get_args(ReturnStatus)

OrderStatus = Literal[
    "pending", "processing", "on_hold", "partially_fulfilled", "fulfilled", "cancelled"
]
ORDER_STATUSES: tuple[str, ...] = get_args(OrderStatus)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OrderLineItem(_Record):
    product_id: str | None = None
    sku: str | None = None
    name: str | None = None
    quantity: int
    unit_price: Money | None = Field(default=None, description="Major currency units.")


class Order(_Record):
    """``wms/orders``."""

    id: str
    order_number: str | None = None
    status: OrderStatus
    customer_name: str | None = None
    customer_email: str | None = None
    line_items: list[OrderLineItem] = Field(default_factory=list)
    total_amount: Money | None = Field(default=None, description="Major currency units.")
    currency: str | None = Field(default=None, description="ISO 4217 code, upper-case.")
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class ReturnLineItem(_Record):
    product_id: str | None = None
    sku: str | None = None
    quantity: int
    reason: str | None = None


class ReturnLineItemInput(ReturnLineItem):
    quantity: Quantity


class Return(_Record):
    """``wms/returns`` (return merchandise authorizations).

    ``status`` is one of: requested (asked for, not yet accepted), open (accepted, awaiting the
    parcel), received (arrived at the warehouse), processing (being inspected/restocked),
    completed, declined (refused by the merchant), cancelled. ``reason`` is lower-case
    snake_case (e.g. ``defective``, ``size_too_small``) or null when the provider has none.
    """

    id: str
    order_id: str | None = None
    status: ReturnStatus
    reason: str | None = None
    line_items: list[ReturnLineItem] = Field(default_factory=list)
    tracking_number: str | None = None
    carrier: str | None = None
    refund_amount: Money | None = Field(
        default=None, description="Refunded amount in major currency units (decimal)."
    )
    currency: str | None = Field(default=None, description="ISO 4217 code, upper-case.")
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class Product(_Record):
    """``wms/products``."""

    id: str
    sku: str | None = None
    name: str
    description: str | None = None
    price: Money | None = Field(default=None, description="Major currency units.")
    quantity_available: int | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class ReturnReason(_Record):
    """``wms/return_reasons``: the provider's fixed reason vocabulary (static data)."""

    id: str
    label: str


class Contact(_Record):
    """``crm/contacts``."""

    id: str
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    phone: str | None = None
    company_id: str | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class Company(_Record):
    """``crm/companies``."""

    id: str
    name: str
    domain: str | None = None
    phone: str | None = None
    city: str | None = None
    country: str | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class ContactInput(_Record):
    """Body of create/update on ``crm/contacts`` (update: any subset)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.com"}]
        }
    )

    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    phone: str | None = None
    company_id: str | None = None


class CompanyInput(_Record):
    """Body of create/update on ``crm/companies`` (update: any subset)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "Harbor Trading", "domain": "harbor.example", "city": "Berlin",
                 "country": "DE"}
            ]
        }
    )  # fmt: skip

    name: str | None = None
    domain: str | None = None
    phone: str | None = None
    city: str | None = None
    country: str | None = None


class Address(_Record):
    """A postal address (write-only: providers need it to ship an order)."""

    name: str | None = None
    address1: str
    address2: str | None = None
    city: str
    state: str | None = None
    zip_code: str | None = None
    country: str = Field(description="ISO 3166-1 alpha-2 code.")


class OrderLineItemInput(_Record):
    product_id: str | None = None
    sku: str | None = None
    name: str | None = None
    quantity: Quantity
    unit_price: MoneyInput | None = Field(default=None, description="Major currency units.")


class OrderInput(_Record):
    """Body of create/update on ``wms/orders`` (update: any subset the provider can change).

    ``shipping_address`` and ``shipping_method`` are write-only: providers need them to ship.
    """

    # A sandbox order: its seeded products are prod_1001 to prod_1040.
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "customer_name": "Ada Lovelace",
                    "customer_email": "ada@example.com",
                    "line_items": [{"product_id": "prod_1001", "quantity": 2}],
                    "currency": "EUR",
                    "shipping_address": {"name": "Ada Lovelace", "address1": "Unter den Linden 1",
                                         "city": "Berlin", "zip_code": "10117", "country": "DE"},
                    "shipping_method": "standard",
                }
            ]
        }
    )  # fmt: skip

    order_number: str | None = None
    status: OrderStatus | None = None
    customer_name: str | None = None
    customer_email: str | None = None
    line_items: list[OrderLineItemInput] | None = None
    currency: str | None = Field(default=None, description="ISO 4217 code, upper-case.")
    shipping_address: Address | None = None
    shipping_method: str | None = None


class ReturnInput(_Record):
    """Body of create/update on ``wms/returns`` (update: any subset)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "order_id": "ord_5001",
                    "reason": "damaged",
                    "line_items": [{"product_id": "prod_1001", "quantity": 1}],
                }
            ]
        }
    )

    order_id: str | None = None
    status: ReturnStatus | None = None
    reason: str | None = None
    line_items: list[ReturnLineItemInput] | None = None
    tracking_number: str | None = None
    carrier: str | None = None


class ProductInput(_Record):
    """Body of create/update on ``wms/products`` (update: any subset)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"sku": "SBX-2001", "name": "Harbor Tote", "price": 24.5,
                          "quantity_available": 50}]
        }
    )  # fmt: skip

    sku: str | None = None
    name: str | None = None
    description: str | None = None
    price: MoneyInput | None = Field(default=None, description="Major currency units.")
    quantity_available: StrictInt | None = Field(default=None, ge=0, le=MAX_QUANTITY * 1000)


RECORD_SCHEMAS: dict[tuple[str, str], type[BaseModel]] = {
    ("wms", "orders"): Order,
    ("wms", "returns"): Return,
    ("wms", "products"): Product,
    ("wms", "return_reasons"): ReturnReason,
    ("crm", "contacts"): Contact,
    ("crm", "companies"): Company,
}
INPUT_SCHEMAS: dict[tuple[str, str], type[BaseModel]] = {
    ("wms", "orders"): OrderInput,
    ("wms", "returns"): ReturnInput,
    ("wms", "products"): ProductInput,
    ("crm", "contacts"): ContactInput,
    ("crm", "companies"): CompanyInput,
}


@cache
def _page_adapter(category: str, resource: str) -> TypeAdapter[list[Any]]:
    schema: Any = RECORD_SCHEMAS[(category, resource)]
    return TypeAdapter(list[schema])


def validate_records(category: str, resource: str, records: list[Any]) -> list[dict[str, Any]]:
    """The records as the unified schema serializes them (raises ValidationError otherwise):
    the one check every mapped record passes, in the engine and in the tests. A page is
    validated in one call (pydantic-core runs the loop), about 20% cheaper than per record."""
    adapter = _page_adapter(category, resource)
    dumped: list[dict[str, Any]] = adapter.dump_python(
        adapter.validate_python(records), mode="json"
    )
    return dumped


def validate_records_json(category: str, resource: str, records_json: str) -> bytes:
    """``validate_records`` for a JSON array given as text; the checked records as JSON."""
    adapter = _page_adapter(category, resource)
    return adapter.dump_json(adapter.validate_json(records_json))


def validate_record(category: str, resource: str, record: Any) -> dict[str, Any]:
    """One record as the unified schema serializes it (raises ValidationError otherwise)."""
    return validate_records(category, resource, [record])[0]


def enum_values(schema: type[BaseModel], name: str) -> list[str]:
    """The values an enumerated field of ``schema`` takes (empty: not enumerated); a filter
    of the same name takes the same values."""
    field = schema.model_fields.get(name)
    if field is None:
        return []
    for candidate in (field.annotation, *get_args(field.annotation)):
        if get_origin(candidate) is Literal:
            return [v for v in get_args(candidate) if isinstance(v, str)]
    return []
