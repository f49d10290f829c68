"""Worker pools per queue class, with real processes: a sync run held mid-page does not hold
up webhook delivery.

What this proves: with the workers `switchyard run` starts (``worker_processes``: one pool per
class, each `switchyard worker --queues <class>`), a test webhook is delivered — signed, at a
real receiver — while a sync run is provably under way on the sync worker: its first page is
held open by the provider fake until the test lets it go, so the run is ``running`` before,
during and after the delivery. With the old layout, one worker on every queue, the same
delivery is enqueued and stays pending for as long as the page is held (that single worker is
busy with the run: no other process can deliver it, so the assertion does not depend on
timing), and arrives once the page is let go. And everything rq-scheduler enqueues (the
reaper, retention, cron ticks) goes to the housekeeping class's queue.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import redis
from fastapi import FastAPI, Request, Response
from fastapi.testclient import TestClient
from rq import Worker
from standardwebhooks import Webhook as Verifier
from starlette.middleware.base import RequestResponseEndpoint

from core.settings import Settings
from platform_api.queueing.queues import ALL_QUEUES, QUEUE_CLASSES, WEBHOOKS, get_queue
from platform_api.queueing.scheduler import make_scheduler
from platform_api.sync.triggers import JOB_PREFIX
from platform_api.tasks.recurring import REAPER_JOB_ID, schedule_recurring_jobs
from platform_api.tasks.retention import JOB_ID as RETENTION_JOB_ID
from switchyard.processes import worker_processes
from tests.platform_api.processes import Processes, wait_until
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run
from tests.platform_api.unified.conftest import UpstreamFor
from tests.platform_api.unified.fakes.common import FakeState
from tests.platform_api.unified.providers import SANDBOX, Provider
from tests.platform_api.webhooks.conftest import create_webhook, deliveries
from tests.platform_api.webhooks.conftest import receiver as receiver  # noqa: F401 (fixture)
from tests.platform_api.webhooks.conftest import settings as settings  # noqa: F401 (fixture)
from tests.platform_api.webhooks.receiver import Receiver, ok

pytestmark = pytest.mark.db

# A bound for things that happen at once (processes starting, a job being picked up); the
# held page never times out meanwhile (see slow_provider_calls_allowed).
WAIT_S = 60.0


@dataclass
class PageGate:
    """Holds the provider's list-of-returns pages open until the test lets them go."""

    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def provider(self) -> Provider:
        """The sandbox fake, its ``GET /store/returns`` held at this gate."""

        def serve(data: Any) -> tuple[FastAPI, FakeState]:
            app, state = SANDBOX.serve(data)

            @app.middleware("http")
            async def hold(request: Request, call_next: RequestResponseEndpoint) -> Response:
                if request.method == "GET" and request.url.path == "/store/returns":
                    self.reached.set()
                    # Off the event loop: the fake keeps answering everything else.
                    await asyncio.to_thread(self.released.wait)
                return await call_next(request)

            return app, state

        return replace(SANDBOX, serve=serve)


@pytest.fixture
def gate() -> Iterator[PageGate]:
    held = PageGate()
    yield held
    held.released.set()  # whatever happened, nothing stays blocked


@pytest.fixture(autouse=True)
def slow_provider_calls_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker processes wait on the held page as long as the test holds it (the default
    read timeout, 20 s, could end it first on a loaded machine)."""
    monkeypatch.setenv("SWITCHYARD_UPSTREAM_TIMEOUT_S", "600")


def _start_workers(
    processes: Processes, redis_client: redis.Redis, workers: dict[str, list[str]]
) -> dict[str, list[str]]:
    """Start `switchyard worker` processes (name to arguments) and wait until each listens;
    returns the queues each one serves, as it registered them in Redis."""
    pids = {processes.start(name, *args).pid: name for name, args in workers.items()}
    wait_until(lambda: len(Worker.all(connection=redis_client)) == len(workers), WAIT_S)
    return {
        pids.get(w.pid or 0, f"pid {w.pid}"): w.queue_names()
        for w in Worker.all(connection=redis_client)
    }


def _run_status(client: TestClient, headers: dict[str, str], run_id: str) -> str:
    response = client.get(f"/v1/sync-job-run/{run_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["status"]


def _send_test_event(client: TestClient, headers: dict[str, str], hook_id: str) -> str:
    response = client.post("/v1/webhook/test", json={"id": hook_id}, headers=headers)
    assert response.status_code == 202, response.text
    return response.json()["delivery_id"]


def _delivery(client: TestClient, headers: dict[str, str], hook_id: str, delivery_id: str) -> dict:
    return next(d for d in deliveries(client, headers, hook_id) if d["id"] == delivery_id)


def _hold_a_run(
    client: TestClient, headers: dict[str, str], upstream_for: UpstreamFor, gate: PageGate
) -> str:
    """Queue a sync run and wait until a worker is inside its first page; returns its id."""
    upstream = upstream_for(gate.provider())
    job = create_job(client, headers, RETURNS_JOB)
    run_id = start_run(client, headers, job["id"], upstream.account_id)
    assert gate.reached.wait(WAIT_S), "no worker asked the provider for the run's first page"
    assert _run_status(client, headers, run_id) == "running"
    return run_id


@pytest.mark.slow
def test_a_webhook_is_delivered_while_a_sync_run_holds_the_sync_worker(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for: UpstreamFor,
    receiver: Receiver,  # noqa: F811
    settings: Settings,  # noqa: F811
    processes: Processes,
    gate: PageGate,
) -> None:
    # What `switchyard run` starts (one worker per class at the default counts), as it does.
    cli = [sys.executable, "-m", "switchyard.cli"]
    pools = {spec.name: spec.argv[len(cli) :] for spec in worker_processes(settings)}
    assert all(spec.argv[: len(cli)] == cli for spec in worker_processes(settings))
    serving = _start_workers(processes, redis_client, pools)
    assert serving == {
        "worker-webhooks-1": ["webhooks"],
        "worker-sync-1": ["sync"],
        "worker-housekeeping-1": ["default"],
    }
    processes.start("dispatcher", "dispatcher")
    hook = create_webhook(client, auth_headers, receiver.plan("pools", ok()),
                          event_types=["integrated_account:deleted"])  # fmt: skip

    run_id = _hold_a_run(client, auth_headers, upstream_for, gate)
    delivery_id = _send_test_event(client, auth_headers, hook["id"])

    [got] = receiver.wait_for("pools", 1, timeout=WAIT_S)
    envelope = Verifier(hook["secret"]).verify(got.body, got.headers)
    assert envelope["event"] == "webhook:test"
    wait_until(
        lambda: _delivery(client, auth_headers, hook["id"], delivery_id)["status"] == "succeeded",
        WAIT_S,
    )
    # Delivered while the run's first page is still held: the run is still under way.
    assert not gate.released.is_set()
    assert _run_status(client, auth_headers, run_id) == "running"

    gate.released.set()
    wait_until(lambda: _run_status(client, auth_headers, run_id) == "completed", WAIT_S)


@pytest.mark.slow
def test_with_one_worker_on_every_queue_the_delivery_waits_behind_the_run(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for: UpstreamFor,
    receiver: Receiver,  # noqa: F811
    processes: Processes,
    gate: PageGate,
) -> None:
    # The old layout: one `switchyard worker` with no option serves every queue.
    serving = _start_workers(processes, redis_client, {"worker": ["worker"]})
    assert serving == {"worker": list(ALL_QUEUES)}
    processes.start("dispatcher", "dispatcher")
    hook = create_webhook(client, auth_headers, receiver.plan("single", ok()),
                          event_types=["integrated_account:deleted"])  # fmt: skip

    run_id = _hold_a_run(client, auth_headers, upstream_for, gate)
    delivery_id = _send_test_event(client, auth_headers, hook["id"])

    # The dispatcher has enqueued the delivery; the one worker is busy with the held run.
    webhooks_queue = get_queue(WEBHOOKS, redis_client)
    wait_until(lambda: webhooks_queue.count == 1, WAIT_S)
    [worker] = Worker.all(connection=redis_client)
    assert worker.get_current_job_id() == run_id  # a run's RQ job id is the run's id
    pending = _delivery(client, auth_headers, hook["id"], delivery_id)
    assert pending["status"] == "pending" and pending["attempts"] == []
    assert receiver.received("single") == []

    gate.released.set()
    receiver.wait_for("single", 1, timeout=WAIT_S)
    wait_until(lambda: _run_status(client, auth_headers, run_id) == "completed", WAIT_S)
    wait_until(
        lambda: _delivery(client, auth_headers, hook["id"], delivery_id)["status"] == "succeeded",
        WAIT_S,
    )


def test_scheduled_housekeeping_lands_on_the_housekeeping_workers_queue(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for: UpstreamFor,
) -> None:
    """The reaper, retention and sync cron ticks are scheduled onto the housekeeping class's
    queue: a long sync run never delays them."""
    scheduler = make_scheduler(redis_client)
    schedule_recurring_jobs(scheduler)
    account = upstream_for(SANDBOX).account_id
    body = {"sync_job_id": create_job(client, auth_headers, RETURNS_JOB)["id"],
            "integrated_account_id": account, "cron_expression": "0 3 * * *"}  # fmt: skip
    created = client.post("/v1/sync-job-cron-trigger", json=body, headers=auth_headers)
    assert created.status_code == 201, created.text
    scheduled = {job.id: job.origin for job in scheduler.get_jobs()}
    ticks = JOB_PREFIX + created.json()["id"]
    assert {REAPER_JOB_ID, RETENTION_JOB_ID, ticks} <= set(scheduled), scheduled
    assert set(scheduled.values()) == set(QUEUE_CLASSES["housekeeping"]), scheduled
