"""A two-level sync job end to end: orders, then each order's returns (``depends_on``), run by
a real RQ worker against the sandbox fake; every event arrives signed at a real receiver on
loopback, and the cache ends equal to what the provider holds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from standardwebhooks import Webhook as Verifier

from tests.platform_api.sync.helpers import create_job, work
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import SANDBOX
from tests.platform_api.webhooks.conftest import create_webhook
from tests.platform_api.webhooks.conftest import pump as pump  # noqa: F401 (fixture)
from tests.platform_api.webhooks.conftest import receiver as receiver  # noqa: F401 (fixture)
from tests.platform_api.webhooks.conftest import settings as settings  # noqa: F401 (fixture)
from tests.platform_api.webhooks.receiver import Receiver, ok

pytestmark = pytest.mark.db

ORDERS_THEN_THEIR_RETURNS = {
    "integration_name": "sandbox",
    "resources": [
        {"resource": "wms/orders"},
        {"resource": "wms/returns", "depends_on": "wms/orders",
         "query": {"order_id": "{{parent.id}}"}},
    ],
}  # fmt: skip


def _live(client: TestClient, headers: dict[str, str], resource: str, account: str) -> list[dict]:
    params = {"integrated_account_id": account, "limit": 100}
    return [r for p in walk_pages(client, f"/v1/unified/wms/{resource}", headers, params)
            for r in p]  # fmt: skip


def test_events_arrive_signed_and_the_cache_equals_the_provider(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
    receiver: Receiver,  # noqa: F811
    pump: Callable[..., None],  # noqa: F811
) -> None:
    account = upstream_for(SANDBOX).account_id
    hook = create_webhook(client, auth_headers, receiver.plan("sync", ok()))
    job = create_job(client, auth_headers, ORDERS_THEN_THEIR_RETURNS)
    body = {"sync_job_id": job["id"], "integrated_account_id": account, "webhook_id": hook["id"]}
    created = client.post("/v1/sync-job-run", json=body, headers=auth_headers)
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    work(redis_client)

    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "completed", run
    stats = run["resource_stats"]
    orders = _live(client, auth_headers, "orders", account)
    returns = _live(client, auth_headers, "returns", account)
    assert stats["wms/orders"] == {"pages": 2, "records": len(orders), "errors": 0}
    assert stats["wms/returns"]["pages"] == len(orders)  # one listing per order
    assert stats["wms/returns"]["records"] == len(returns) > 0

    expected = 2 + stats["wms/orders"]["pages"] + stats["wms/returns"]["pages"]
    pump(lambda: len(receiver.received("sync")) >= expected, timeout=60)
    verifier = Verifier(hook["secret"])
    envelopes = [verifier.verify(r.body, r.headers) for r in receiver.received("sync")]
    assert len({e["id"] for e in envelopes}) == len(envelopes) == expected  # each once
    kinds = Counter(e["event"] for e in envelopes)
    assert kinds == {"sync_job_run:started": 1, "sync_job_run:completed": 1,
                     "sync_job_run:record": expected - 2}  # fmt: skip
    assert all(e["payload"]["sync_job_run_id"] == run_id for e in envelopes)
    [completed] = [e for e in envelopes if e["event"] == "sync_job_run:completed"]
    assert completed["payload"]["resource_stats"] == stats

    pages = [e["payload"] for e in envelopes if e["event"] == "sync_job_run:record"]
    sent = {resource: sorted((r for p in pages if p["resource"] == resource
                              for r in p["records"]), key=lambda r: r["id"])
            for resource in ("wms/orders", "wms/returns")}  # fmt: skip
    assert sent["wms/orders"] == sorted(orders, key=lambda r: r["id"])
    assert sent["wms/returns"] == sorted(returns, key=lambda r: r["id"])

    cached = [r for p in walk_pages(client, "/v1/unified_cache/returns", auth_headers,
                                    {"integrated_account_id": account, "limit": 200})
              for r in p]  # fmt: skip
    assert all(r.pop("cached_at") for r in cached)
    assert sorted(cached, key=lambda r: r["id"]) == sent["wms/returns"]
