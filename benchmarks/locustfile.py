"""Load test: the traffic mix a support pipeline sends, for locust.

Headless, against a running service (``make run`` in another terminal)::

    .venv/bin/locust -f benchmarks/locustfile.py --host http://127.0.0.1:8000 \\
        --headless -u 32 -r 8 -t 2m --csv var/locust

Interactive: drop ``--headless``/``-u``/``-r``/``-t`` and open http://127.0.0.1:8089.

The run creates what it uses, in the service's own database (``DATABASE_URL``, the same
settings the service reads, so run it from the service's checkout and environment): an API
token and a sandbox account. Unified lists use ``skip_api_call=true``, so no provider is
called. Set ``SWITCHYARD_LOAD_TOKEN`` and ``SWITCHYARD_LOAD_ACCOUNT`` to use existing ones
(a remote service).
"""

from __future__ import annotations

import os
import random
from typing import Any

from locust import HttpUser, between, events, task

from benchmarks.common import create_token_and_sandbox_account

MESSAGES = [
    "where is my parcel? it was due on monday",
    "I want a refund for the broken blender",
    "can I change the delivery address on order 5521",
    "cancel my order please",
    "do you have this jacket in a medium?",
    "the courier left my box in the rain, everything is soaked",
    "thanks, the support team was great",
    "how do I reset my password",
    "my card was charged twice for one order",
    "is there a discount for students",
]
HISTORY = [
    {"role": "customer", "text": "I ordered the blue kettle last week"},
    {"role": "agent", "text": "Thanks, I can see the order. What can I do for you?"},
]


class Fixtures:
    """The token and account every simulated user shares."""

    token: str = ""
    account_id: str = ""


@events.test_start.add_listener
def _prepare(environment: Any, **_: Any) -> None:
    token = os.environ.get("SWITCHYARD_LOAD_TOKEN")
    account = os.environ.get("SWITCHYARD_LOAD_ACCOUNT")
    if not (token and account):
        token, account = create_token_and_sandbox_account("locust")
    Fixtures.token, Fixtures.account_id = token, account


class SupportPipeline(HttpUser):
    """One client of the service: mostly single messages, some batches, some platform reads."""

    wait_time = between(0.0, 0.05)

    def on_start(self) -> None:
        self.client.headers["Authorization"] = f"Bearer {Fixtures.token}"

    @task(10)
    def classify(self) -> None:
        body = {"message": random.choice(MESSAGES), "top_k": 3}
        self.client.post("/v1/inference/intent-classify", json=body, name="classify")

    @task(3)
    def classify_with_history(self) -> None:
        body = {"message": "it still has not arrived", "conversation_history": HISTORY}
        self.client.post("/v1/inference/intent-classify", json=body, name="classify+history")

    @task(2)
    def classify_batch(self) -> None:
        size = random.randint(10, 100)
        messages = [{"id": str(i), "message": random.choice(MESSAGES)} for i in range(size)]
        self.client.post(
            "/v1/inference/intent-classify/batch", json={"messages": messages}, name="batch"
        )

    @task(2)
    def unified_orders(self) -> None:
        account = Fixtures.account_id
        params = {"integrated_account_id": account, "limit": 50, "skip_api_call": "true"}
        self.client.get("/v1/unified/wms/orders", params=params, name="unified (skip_api_call)")

    @task(1)
    def management_reads(self) -> None:
        self.client.get("/v1/integrated-account", params={"limit": 20}, name="accounts")
        self.client.get("/v1/environment-integration", name="installed integrations")
        self.client.get(f"/v1/integrated-account/{Fixtures.account_id}", name="account")
