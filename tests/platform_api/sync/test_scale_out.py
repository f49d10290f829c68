"""Scale-out: two HTTP fronts and two workers of each kind, as separate processes (as on
separate machines), on one database and one Redis.

A run created through one front is executed once and its events are delivered once; cache
reads agree through either front; a sync worker killed mid-run loses nothing: the reaper ends
the run (its lease taken, so nothing more is written for it), and the next run, executed by
the other worker, brings the cache level with the provider.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

import httpx
import pytest
import redis
from rq import Worker
from standardwebhooks import Webhook as Verifier

from core.settings import Settings
from platform_api.sync.reaper import reap
from platform_api.tables.common import utcnow
from sandbox import data as sandbox_data
from tests.conftest import free_port
from tests.platform_api.factories import bearer
from tests.platform_api.processes import Processes, wait_until
from tests.platform_api.sync.helpers import RETURNS_JOB
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import SANDBOX
from tests.platform_api.webhooks.conftest import receiver as receiver  # noqa: F401 (fixture)
from tests.platform_api.webhooks.conftest import settings as settings  # noqa: F401 (fixture)
from tests.platform_api.webhooks.receiver import Receiver, ok

pytestmark = pytest.mark.db

# Five pages of 100, each held up by the fake (delay_s) so a worker can be killed mid-run.
MANY_RETURNS = replace(SANDBOX, build=lambda: sandbox_data.seed(returns=450))
KINDS = ("webhooks", "sync", "housekeeping")


@pytest.fixture
def fronts(
    settings: Settings, processes: Processes, make_token: Callable[..., str]
) -> Iterator[list[httpx.Client]]:
    """Two fronts, two workers per queue and two dispatchers; a client of each front."""
    urls = [processes.start_front(f"front-{n}", free_port()) for n in ("a", "b")]
    for queue in KINDS:
        for n in (1, 2):
            processes.start(f"worker-{queue}-{n}", "worker", "--queues", queue)
    for n in (1, 2):
        processes.start(f"dispatcher-{n}", "dispatcher")
    headers = bearer(make_token("development"))
    clients = [httpx.Client(base_url=url, headers=headers, timeout=10) for url in urls]
    for client in clients:
        wait_until(partial(_answers, client), timeout=60)
    yield clients
    for client in clients:
        client.close()


def _answers(client: httpx.Client) -> bool:
    try:
        return client.get("/healthz").status_code == 200
    except httpx.HTTPError:
        return False


def _run(client: httpx.Client, run_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/sync-job-run/{run_id}")
    assert response.status_code == 200, response.text
    return response.json()


def _start(client: httpx.Client, job_id: str, account: str, webhook_id: str) -> str:
    body = {"sync_job_id": job_id, "integrated_account_id": account, "webhook_id": webhook_id}
    response = client.post("/v1/sync-job-run", json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _cached(client: httpx.Client, account: str) -> list[dict[str, Any]]:
    """Every cached return, through this front."""
    params = {"integrated_account_id": account, "limit": 200}
    pages = walk_pages(client, "/v1/unified_cache/returns", {}, params)  # type: ignore[arg-type]
    return [record for page in pages for record in page]


def _events(receiver: Receiver, secret: str) -> list[dict[str, Any]]:  # noqa: F811
    verifier = Verifier(secret)
    return [verifier.verify(r.body, r.headers) for r in receiver.received("scale")]


def _worker_running(connection: redis.Redis, run_id: str) -> int:
    """The pid of the RQ worker whose work horse is executing the run."""
    for worker in Worker.all(connection=connection):
        if worker.get_current_job_id() == run_id:
            return worker.pid  # type: ignore[return-value]
    raise AssertionError(f"no worker is executing {run_id}")


def test_two_fronts_and_two_workers_of_each_kind_share_the_work(
    fronts: list[httpx.Client],
    settings: Settings,  # noqa: F811
    redis_client: redis.Redis,
    receiver: Receiver,  # noqa: F811
    upstream_for: Callable[..., Any],
    processes: Processes,
) -> None:
    front_a, front_b = fronts
    upstream = upstream_for(MANY_RETURNS)
    upstream.state.delay_s = 0.2
    hook = front_a.post("/v1/webhook", json={"target_url": receiver.plan("scale", ok())})
    assert hook.status_code == 201, hook.text
    job = front_b.post("/v1/sync-job", json=RETURNS_JOB).json()

    # Created through one front, read through the other: executed once, each event once.
    run_id = _start(front_a, job["id"], upstream.account_id, hook.json()["id"])
    wait_until(lambda: _run(front_b, run_id)["status"] == "completed", timeout=90)
    pages = _run(front_b, run_id)["resource_stats"]["wms/returns"]["pages"]
    receiver.wait_for("scale", count=pages + 2, timeout=30)
    events = _events(receiver, hook.json()["secret"])
    assert len({e["id"] for e in events}) == len(events)
    assert Counter(e["event"] for e in events) == {
        "sync_job_run:started": 1, "sync_job_run:record": pages, "sync_job_run:completed": 1,
    }  # fmt: skip
    through_a, through_b = (
        _cached(front_a, upstream.account_id),
        _cached(front_b, upstream.account_id),
    )
    assert through_a == through_b
    assert sorted(r["id"] for r in through_a) == sorted(upstream.data.returns)

    # A sync worker dies mid-run (SIGKILL, its work horse too).
    upstream.state.delay_s = 0.5
    second = _start(front_b, job["id"], upstream.account_id, hook.json()["id"])
    wait_until(lambda: _run(front_a, second)["resource_stats"]["wms/returns"]["pages"] >= 2,
               timeout=60)  # fmt: skip
    victim = _worker_running(redis_client, second)
    [name] = [n for n, p in processes.running.items() if p.pid == victim]
    processes.kill(name)
    assert _run(front_a, second)["status"] == "running"

    # The reaper (every minute in production) fails it once its heartbeat is stale.
    later = utcnow() + timedelta(seconds=settings.sync_run_stale_s + 1)
    assert reap(settings, redis_client, now=later)["failed"] == 1
    failed = _run(front_b, second)
    assert failed["status"] == "failed"

    # The next run goes to the surviving sync worker and completes; nothing was lost.
    upstream.state.delay_s = 0
    third = _start(front_a, job["id"], upstream.account_id, hook.json()["id"])
    wait_until(lambda: _run(front_b, third)["status"] == "completed", timeout=90)
    assert sorted(r["id"] for r in _cached(front_b, upstream.account_id)) == sorted(
        upstream.data.returns
    )
    terminal = {"sync_job_run:completed", "sync_job_run:failed"}

    def ended() -> set[tuple[str, str]]:
        events = _events(receiver, hook.json()["secret"])
        return {(e["payload"]["sync_job_run_id"], e["event"]) for e in events
                if e["event"] in terminal}  # fmt: skip

    wait_until(lambda: len(ended()) == 3, timeout=30)
    assert ended() == {(run_id, "sync_job_run:completed"), (second, "sync_job_run:failed"),
                       (third, "sync_job_run:completed")}  # fmt: skip
    events = _events(receiver, hook.json()["secret"])
    assert len({e["id"] for e in events}) == len(events)  # every event delivered once
