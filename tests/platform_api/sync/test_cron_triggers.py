"""Cron triggers: validated, scheduled in rq-scheduler (UTC), fired by a real worker, kept
across scheduler restarts, stopped when deleted."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
import redis
from fastapi.testclient import TestClient
from rq.job import Job
from rq_scheduler import Scheduler

from core.settings import Settings
from platform_api.queueing.queues import DEFAULT, get_queue
from platform_api.queueing.scheduler import make_scheduler
from platform_api.sync.triggers import JOB_PREFIX, reconcile
from tests.assertions import assert_error
from tests.platform_api.processes import Processes, wait_until
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, work
from tests.platform_api.unified.providers import SANDBOX

pytestmark = pytest.mark.db


def _job(client: TestClient, headers: dict[str, str]) -> str:
    return create_job(client, headers, RETURNS_JOB)["id"]


def _scheduled(connection: redis.Redis) -> dict[str, Job]:
    return {j.id: j for j in make_scheduler(connection).get_jobs() if j.id.startswith(JOB_PREFIX)}


@pytest.mark.parametrize(
    "expression",
    ["every hour", "61 * * * *", "* * * *", "0 0 * * * *", "0 0 31 2 *", "0 0 30 2 *"],
)
def test_a_bad_cron_expression_is_400_naming_it(
    client: TestClient, auth_headers: dict[str, str], upstream_for, expression: str
) -> None:
    account = upstream_for(SANDBOX).account_id
    body = {"sync_job_id": _job(client, auth_headers), "integrated_account_id": account,
            "cron_expression": expression}  # fmt: skip
    response = client.post("/v1/sync-job-cron-trigger", json=body, headers=auth_headers)
    assert "cron_expression" in assert_error(response, 400, "INVALID_REQUEST")["message"]


@pytest.mark.parametrize(
    ("expression", "shortest_s"),
    [
        ("* * * * *", 60),
        ("*/5 * * * *", 300),
        ("0,1 * * * *", 60),  # twice an hour, a minute apart
        ("55 23 * * *", 86_400),
        ("0 0,23 * * *", 3_600),  # 23:00 to the next day's 00:00
        ("59 23,0 * * 1", 3_600),  # 00:59 and 23:59: 23:59 to the next 00:59
        ("0 0 1 1 *", 86_400),
    ],
)
def test_the_shortest_interval_of_an_expression(expression: str, shortest_s: int) -> None:
    from platform_api.sync.triggers import shortest_interval_s

    assert shortest_interval_s(expression) == shortest_s


@pytest.mark.parametrize("expression", ["* * * * *", "*/4 * * * *", "0,1 * * * *"])
def test_a_trigger_firing_more_often_than_allowed_is_400_naming_the_setting(
    client: TestClient, auth_headers: dict[str, str], upstream_for, expression: str
) -> None:
    account = upstream_for(SANDBOX).account_id
    body = {"sync_job_id": _job(client, auth_headers), "integrated_account_id": account,
            "cron_expression": expression}  # fmt: skip
    response = client.post("/v1/sync-job-cron-trigger", json=body, headers=auth_headers)
    message = assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert "SWITCHYARD_SYNC_CRON_MIN_INTERVAL_S" in message and "300 s" in message
    assert client.get("/v1/sync-job-cron-trigger", headers=auth_headers).json()["result"] == []


def test_a_trigger_fires_a_run_survives_restarts_and_stops_when_deleted(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    account = upstream_for(SANDBOX).account_id
    job_id = _job(client, auth_headers)
    body = {"sync_job_id": job_id, "integrated_account_id": account,
            "cron_expression": "*/15 * * * *"}  # fmt: skip
    created = client.post("/v1/sync-job-cron-trigger", json=body, headers=auth_headers)
    assert created.status_code == 201, created.text
    trigger = created.json()
    next_run = datetime.fromisoformat(trigger["next_run_at"].replace("Z", "+00:00"))
    assert next_run.minute % 15 == 0 and next_run.second == 0
    listed = client.get("/v1/sync-job-cron-trigger", headers=auth_headers).json()["result"]
    assert [t["id"] for t in listed] == [trigger["id"]]

    scheduled = _scheduled(redis_client)
    assert list(scheduled) == [JOB_PREFIX + trigger["id"]]
    assert scheduled[JOB_PREFIX + trigger["id"]].meta["cron_string"] == "*/15 * * * *"

    # Redis loses the schedule (a restart without persistence); the next scheduler start
    # registers it again from the database, once.
    make_scheduler(redis_client).cancel(JOB_PREFIX + trigger["id"])
    scheduler = make_scheduler(redis_client)
    assert reconcile(settings, scheduler) == 1
    assert reconcile(settings, scheduler) == 1
    assert list(_scheduled(redis_client)) == [JOB_PREFIX + trigger["id"]]

    # A tick: the scheduler moves the job to the housekeeping queue; one worker fires it (a run is
    # queued) and then executes that run.
    scheduler.enqueue_job(_scheduled(redis_client)[JOB_PREFIX + trigger["id"]])
    work(redis_client)
    runs = client.get("/v1/sync-job-run", params={"sync_job_id": job_id},
                      headers=auth_headers).json()["result"]  # fmt: skip
    assert [r["status"] for r in runs] == ["completed"]
    assert list(_scheduled(redis_client)) == [JOB_PREFIX + trigger["id"]]  # still scheduled

    deleted = client.delete(f"/v1/sync-job-cron-trigger/{trigger['id']}", headers=auth_headers)
    assert deleted.status_code == 204
    assert _scheduled(redis_client) == {}
    assert_error(client.get(f"/v1/sync-job-cron-trigger/{trigger['id']}", headers=auth_headers),
                 404, "NOT_FOUND")  # fmt: skip


def test_deleting_the_job_takes_its_triggers_and_their_schedules(
    client: TestClient, auth_headers: dict[str, str], redis_client: redis.Redis, upstream_for
) -> None:
    account = upstream_for(SANDBOX).account_id
    job_id = _job(client, auth_headers)
    body = {"sync_job_id": job_id, "integrated_account_id": account,
            "cron_expression": "0 3 * * *"}  # fmt: skip
    trigger = client.post("/v1/sync-job-cron-trigger", json=body, headers=auth_headers).json()
    assert list(_scheduled(redis_client)) == [JOB_PREFIX + trigger["id"]]
    assert client.delete(f"/v1/sync-job/{job_id}", headers=auth_headers).status_code == 204
    assert _scheduled(redis_client) == {}
    assert_error(client.get(f"/v1/sync-job-cron-trigger/{trigger['id']}", headers=auth_headers),
                 404, "NOT_FOUND")  # fmt: skip


@pytest.mark.slow
def test_two_scheduler_processes_fire_a_tick_once(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for,
    processes: Processes,
) -> None:
    account = upstream_for(SANDBOX).account_id
    job_id = _job(client, auth_headers)
    body = {"sync_job_id": job_id, "integrated_account_id": account,
            "cron_expression": "0 0 1 1 *"}  # fmt: skip
    trigger = client.post("/v1/sync-job-cron-trigger", json=body, headers=auth_headers).json()
    for name in ("scheduler-a", "scheduler-b"):
        processes.start(name, "scheduler", "--interval", "1")
    # Both are past their start (each re-registers every trigger) once both are registered.
    instances = Scheduler.redis_scheduler_namespace_prefix + "*"
    wait_until(lambda: len(redis_client.keys(instances)) == 2)

    # The tick comes due now (a scheduler tick override: the trigger's next tick is in January).
    job_key = JOB_PREFIX + trigger["id"]
    redis_client.zadd(Scheduler.scheduled_jobs_key, {job_key: time.time() - 1})
    # Ticks are housekeeping: they never wait behind a long sync run.
    tick_queue = get_queue(DEFAULT, redis_client)
    wait_until(lambda: job_key in tick_queue.job_ids)
    # Both schedulers check again several times; the tick stays fired once (the queue also
    # holds the schedulers' own recurring jobs, the reaper's among them).
    time.sleep(3)
    assert [j for j in tick_queue.job_ids if j.startswith(JOB_PREFIX)] == [job_key]
    next_tick = redis_client.zscore(Scheduler.scheduled_jobs_key, job_key)
    assert next_tick is not None
    assert datetime.fromtimestamp(next_tick, UTC).strftime("%m-%d %H:%M") == "01-01 00:00"

    processes.kill_all()
    work(redis_client)
    runs = client.get("/v1/sync-job-run", params={"sync_job_id": job_id},
                      headers=auth_headers).json()["result"]  # fmt: skip
    assert [r["status"] for r in runs] == ["completed"]
