"""Runs survive what goes wrong: a provider's 429s, a worker that dies, a lost queue job."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
import redis
import sqlalchemy as sa
from fastapi.testclient import TestClient
from rq.job import Job
from rq.serializers import JSONSerializer
from sqlmodel import col, select

from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.queueing.queues import SYNC, get_queue
from platform_api.sync.reaper import reap
from platform_api.tables.common import utcnow
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.sync import SyncJobRun
from sandbox import data as sandbox_data
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, work
from tests.platform_api.unified.fakes.common import Scripted
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import SANDBOX

pytestmark = pytest.mark.db


def _start(client: TestClient, headers: dict[str, str], account: str) -> str:
    job = create_job(client, headers, RETURNS_JOB)
    return start_run(client, headers, job["id"], account)


@pytest.fixture
def no_engine_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """429s reach the run at once (the engine itself would retry them first)."""
    monkeypatch.setenv("SWITCHYARD_UPSTREAM_MAX_RETRIES", "0")
    get_settings.cache_clear()
    yield
    # monkeypatch restores the environment after this; settings read from it then must not
    # keep this test's values.
    monkeypatch.undo()
    get_settings.cache_clear()


def test_a_429_makes_the_run_wait_then_go_on(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for,
    no_engine_retries: None,
) -> None:
    upstream = upstream_for(SANDBOX)
    upstream.state.fail_next.append(Scripted(429, {"error": "slow down"}, {"Retry-After": "1"}))
    run_id = _start(client, auth_headers, upstream.account_id)
    work(redis_client)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "completed", run
    first_page = [r for r in upstream.state.seen("/store/returns") if "cursor" not in r["query"]]
    assert len(first_page) == 2  # refused once, asked again after Retry-After


def test_a_provider_500_mid_run_fails_the_run_and_keeps_the_pages_it_had(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for,
    no_engine_retries: None,
) -> None:
    upstream = upstream_for(replace(SANDBOX, build=lambda: sandbox_data.seed(returns=250)))
    # Each page is two requests: the returns, then their products (the mapping's fetch step).
    third_page = len(upstream.state.requests) + 5
    upstream.state.fail_on[third_page] = Scripted(500, {"error": {"message": "database on fire"}})
    run_id = _start(client, auth_headers, upstream.account_id)
    work(redis_client)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "failed" and run["error"].startswith("UPSTREAM_ERROR"), run
    assert run["resource_stats"]["wms/returns"] == {"pages": 2, "records": 200, "errors": 1}
    params = {"integrated_account_id": upstream.account_id, "limit": 200}
    cached = [r["id"] for p in walk_pages(client, "/v1/unified_cache/returns", auth_headers,
                                          params) for r in p]  # fmt: skip
    assert sorted(cached) == sorted(upstream.data.returns)[:200]

    again = start_run(client, auth_headers, run["sync_job_id"], upstream.account_id)
    work(redis_client)
    assert client.get(f"/v1/sync-job-run/{again}", headers=auth_headers).json()["status"] == (
        "completed"
    )


def test_a_run_gives_up_after_its_allowed_waits(
    client: TestClient,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    upstream_for,
    no_engine_retries: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWITCHYARD_SYNC_RATE_LIMIT_MAX_WAITS", "0")
    get_settings.cache_clear()
    upstream = upstream_for(SANDBOX)
    upstream.state.fail_next.append(Scripted(429, {"error": "slow down"}, {"Retry-After": "1"}))
    run_id = _start(client, auth_headers, upstream.account_id)
    work(redis_client)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "failed" and run["error"].startswith("RATE_LIMITED")


def test_the_reaper_fails_a_run_whose_worker_died(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    run_id = _start(client, auth_headers, upstream_for(SANDBOX).account_id)
    get_queue(SYNC, redis_client).empty()  # its worker took the job, then was killed
    silent = utcnow() - timedelta(seconds=settings.sync_run_stale_s + 60)
    with session_scope(settings) as session:
        session.execute(
            sa.update(SyncJobRun).where(col(SyncJobRun.id) == run_id)
            .values(status="running", started_at=silent, heartbeat_at=silent)
        )  # fmt: skip
    assert reap(settings, redis_client) == {"failed": 1, "requeued": 0, "admitted": 0}
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "failed" and "stopped answering" in run["error"]
    with session_scope(settings) as session:
        failed = session.exec(
            select(OutboxEvent).where(col(OutboxEvent.event_type) == "sync_job_run:failed")
        ).all()
    assert [e.payload["sync_job_run_id"] for e in failed] == [run_id]
    assert reap(settings, redis_client) == {"failed": 0, "requeued": 0, "admitted": 0}  # once


def test_a_live_run_is_not_reaped(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    run_id = _start(client, auth_headers, upstream_for(SANDBOX).account_id)
    with session_scope(settings) as session:
        session.execute(
            sa.update(SyncJobRun).where(col(SyncJobRun.id) == run_id)
            .values(status="running", heartbeat_at=utcnow())
        )  # fmt: skip
    assert reap(settings, redis_client) == {"failed": 0, "requeued": 0, "admitted": 0}


def test_a_queued_run_whose_job_was_lost_is_queued_again(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    run_id = _start(client, auth_headers, upstream_for(SANDBOX).account_id)
    Job.fetch(run_id, connection=redis_client, serializer=JSONSerializer).delete()
    assert not Job.exists(run_id, connection=redis_client)
    later = utcnow() + timedelta(seconds=settings.sync_run_stale_s + 60)
    assert reap(settings, redis_client, now=later) == {"failed": 0, "requeued": 1, "admitted": 0}
    work(redis_client)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "completed"
