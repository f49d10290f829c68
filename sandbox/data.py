"""Seeded demo data: the same records on every start (a fixed random seed)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

ORDER_STATES = ["PENDING", "PROCESSING", "ON_HOLD", "PARTIALLY_SHIPPED", "SHIPPED", "CANCELLED"]
RETURN_STATES = [
    "REQUESTED", "AUTHORIZED", "RECEIVED", "INSPECTING", "REFUNDED", "REJECTED", "CANCELLED"
]  # fmt: skip
REASON_CODES = [
    "DAMAGED", "WRONG_ITEM", "TOO_SMALL", "TOO_LARGE", "NOT_AS_DESCRIBED", "CHANGED_MIND"
]  # fmt: skip
CARRIERS = ["UPS", "USPS", "FedEx", "DHL"]
FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Ken", "Margaret", "Linus", "Radia", "Donald"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Thompson", "Hamilton", "Torvalds"]
PRODUCT_WORDS = ["Canvas", "Trail", "Wool", "Linen", "Cedar", "Harbor", "Summit", "Meadow"]
PRODUCT_KINDS = ["Tote", "Sneaker", "Beanie", "Shirt", "Jacket", "Mug", "Backpack", "Scarf"]
CITIES = [("Berlin", "DE"), ("Austin", "US"), ("Lyon", "FR"), ("Leeds", "GB"), ("Osaka", "JP")]
EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@dataclass
class SandboxData:
    products: dict[str, dict[str, Any]] = field(default_factory=dict)
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    returns: dict[str, dict[str, Any]] = field(default_factory=dict)
    companies: dict[str, dict[str, Any]] = field(default_factory=dict)
    contacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    counter: int = 10_000

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"


def seed(
    *, products: int = 40, orders: int = 120, returns: int = 60, companies: int = 25,
    contacts: int = 80, seed_value: int = 7,
) -> SandboxData:  # fmt: skip
    """Deterministic demo data (ids sort in creation order).

    One random generator, drawn from in this order: products, orders, returns, companies,
    contacts (reordering the steps would change every record after the first moved one).
    """
    rng = random.Random(seed_value)
    data = SandboxData()
    _seed_products(data, rng, products)
    _seed_orders(data, rng, orders)
    _seed_returns(data, rng, returns)
    _seed_companies(data, rng, companies)
    _seed_contacts(data, rng, contacts)
    return data


def _seed_products(data: SandboxData, rng: random.Random, count: int) -> None:
    for i in range(count):
        pid = f"prod_{1001 + i}"
        created = EPOCH + timedelta(hours=i)
        data.products[pid] = {
            "id": pid,
            "sku": f"SBX-{1001 + i}",
            "title": f"{rng.choice(PRODUCT_WORDS)} {rng.choice(PRODUCT_KINDS)}",
            "description": "A sandbox product.",
            "price_cents": rng.randrange(900, 12900, 100),
            "stock": rng.randrange(0, 400),
            "created": _iso(created),
            "modified": _iso(created + timedelta(days=2)),
        }


def _seed_orders(data: SandboxData, rng: random.Random, count: int) -> None:
    product_ids = list(data.products)
    for i in range(count):
        oid = f"ord_{5001 + i}"
        created = EPOCH + timedelta(hours=6 * i)
        lines = []
        for pid in rng.sample(product_ids, rng.randint(1, 3)):
            product = data.products[pid]
            lines.append(
                {
                    "product_id": pid,
                    "sku": product["sku"],
                    "title": product["title"],
                    "qty": rng.randint(1, 3),
                    "price_cents": product["price_cents"],
                }
            )
        first, last = rng.choice(FIRST), rng.choice(LAST)
        data.orders[oid] = {
            "id": oid,
            "number": f"SBX-{5001 + i}",
            "state": rng.choice(ORDER_STATES),
            "buyer": {"name": f"{first} {last}", "email": f"{first}.{last}@example.com".lower()},
            "lines": lines,
            "total_cents": sum(line["qty"] * line["price_cents"] for line in lines),
            "currency": "EUR",
            "created": _iso(created),
            "modified": _iso(created + timedelta(hours=3)),
        }


def _seed_returns(data: SandboxData, rng: random.Random, count: int) -> None:
    order_ids = list(data.orders)
    for i in range(count):
        rid = f"rma_{7001 + i}"
        order = data.orders[order_ids[(i * 2) % len(order_ids)]]
        created = EPOCH + timedelta(days=3, hours=12 * i)
        reason = rng.choice(REASON_CODES)
        lines = [
            {"product_id": line["product_id"], "qty": line["qty"], "reason_code": reason}
            for line in order["lines"][:2]
        ]
        state = rng.choice(RETURN_STATES)
        refunded = sum(
            line["qty"] * data.products[line["product_id"]]["price_cents"] for line in lines
        )
        data.returns[rid] = {
            "id": rid,
            "rma_number": f"RMA-{7001 + i}",
            "order_id": order["id"],
            "state": state,
            "reason_code": reason,
            # Lines carry product ids only: the unified mapping looks the SKUs up (after-step).
            "lines": lines,
            "shipment": {
                "tracking": f"1Z{rng.randrange(10**9, 10**10)}",
                "carrier": rng.choice(CARRIERS),
            },
            "refund": {
                "amount_cents": refunded if state == "REFUNDED" else None,
                "currency": "EUR",
            },
            "created": _iso(created),
            "modified": _iso(created + timedelta(days=1)),
        }


def _seed_companies(data: SandboxData, rng: random.Random, count: int) -> None:
    for i in range(count):
        cid = f"comp_{3001 + i}"
        city, country = rng.choice(CITIES)
        word = rng.choice(PRODUCT_WORDS)
        created = EPOCH + timedelta(days=i)
        data.companies[cid] = {
            "id": cid, "name": f"{word} Trading {i + 1}",
            "website": f"{word.lower()}{i + 1}.example",
            "phone": f"+49 30 {rng.randrange(1000000, 9999999)}", "city": city, "country": country,
            "created": _iso(created), "modified": _iso(created + timedelta(days=1)),
        }  # fmt: skip


def _seed_contacts(data: SandboxData, rng: random.Random, count: int) -> None:
    company_ids = list(data.companies)
    for i in range(count):
        pid = f"pers_{9001 + i}"
        first, last = rng.choice(FIRST), rng.choice(LAST)
        created = EPOCH + timedelta(hours=10 * i)
        data.contacts[pid] = {
            "id": pid, "given_name": first, "family_name": last,
            "email": f"{first}.{last}{i}@example.com".lower(),
            "phone": f"+1 512 555 {1000 + i}", "company_id": rng.choice(company_ids),
            "created": _iso(created), "modified": _iso(created + timedelta(hours=5)),
        }  # fmt: skip
