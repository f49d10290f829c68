"""The webhooks worker runs jobs in its own process; a job that fails does not stop it, and a
worker killed mid-delivery loses nothing."""

from __future__ import annotations

import sys

import pytest
import redis
from fastapi.testclient import TestClient
from rq import SimpleWorker, Worker
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer
from standardwebhooks import Webhook as Verifier

from platform_api.queueing.queues import DEFAULT, SYNC, WEBHOOKS, get_queue
from platform_api.webhooks.attempts import INTERRUPTED
from platform_api.webhooks.worker import worker_class
from tests.platform_api.processes import Processes, wait_until
from tests.platform_api.webhooks.conftest import create_webhook, deliveries, emit
from tests.platform_api.webhooks.receiver import Receiver, hang, ok

WEBHOOKS_WORKER = [sys.executable, "-m", "platform_api.tasks.webhooks"]


def test_only_a_worker_serving_webhooks_alone_runs_jobs_in_process() -> None:
    assert worker_class([WEBHOOKS]) is SimpleWorker
    # A sync run can hold a worker for hours: those keep a work horse per job.
    assert worker_class([WEBHOOKS, DEFAULT, SYNC]) is Worker
    assert worker_class([SYNC]) is Worker


@pytest.mark.db
@pytest.mark.slow
def test_jobs_that_raise_or_exit_do_not_stop_the_webhooks_worker(
    client: TestClient,
    auth_headers: dict[str, str],
    receiver: Receiver,
    processes: Processes,
    redis_client: redis.Redis,
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("after"))
    queue = get_queue(WEBHOOKS, redis_client)
    queue.enqueue("json.loads", "not json")  # raises
    queue.enqueue("sys.exit", 3)  # what would end a process
    worker = processes.start_argv("worker", WEBHOOKS_WORKER)
    processes.start("dispatcher", "dispatcher")

    event_id = emit()

    [got] = receiver.wait_for("after", 1, timeout=30)
    Verifier(hook["secret"]).verify(got.body, got.headers)
    assert got.headers["webhook-id"] == event_id
    assert worker.poll() is None
    failed = FailedJobRegistry(queue=queue, serializer=JSONSerializer)
    assert len(failed.get_job_ids()) == 2


@pytest.mark.db
@pytest.mark.slow
def test_the_webhooks_worker_killed_mid_delivery_still_delivers_once(
    client: TestClient,
    auth_headers: dict[str, str],
    receiver: Receiver,
    processes: Processes,
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("crash", hang(3), ok()))
    processes.start("dispatcher", "dispatcher")
    processes.start_argv("worker", WEBHOOKS_WORKER)
    event_id = emit()

    receiver.wait_for("crash", 1, timeout=30)  # the worker is inside the request now
    processes.kill("worker")
    processes.start_argv("worker2", WEBHOOKS_WORKER)

    receiver.wait_for("crash", 2, timeout=30)

    def settled() -> bool:
        log = deliveries(client, auth_headers, hook["id"])
        return bool(log) and log[0]["status"] == "succeeded"

    wait_until(settled)
    got = receiver.received("crash")
    assert [r.headers["webhook-id"] for r in got] == [event_id, event_id]
    [delivery] = deliveries(client, auth_headers, hook["id"])
    interrupted, delivered = delivery["attempts"]
    assert interrupted["error"] == INTERRUPTED and interrupted["status_code"] is None
    assert delivered["status_code"] == 200
