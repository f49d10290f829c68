"""Sync runs through crashes of real processes: ``switchyard worker`` SIGKILLed mid-run, and
Redis lost mid-run. A run is never left ``running``, the cache never holds a record twice,
and running the job again brings the cache level with the provider."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from core.settings import Settings, get_settings
from platform_api.sync.reaper import reap
from platform_api.tables.common import utcnow
from sandbox import data as sandbox_data
from switchyard.app import create_app
from tests.platform_api.factories import bearer
from tests.platform_api.processes import Processes, RedisServer, wait_until
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, work
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import SANDBOX

pytestmark = [pytest.mark.db, pytest.mark.slow]

# 450 returns: five pages of 100, slow enough (see delay_s) to crash something in between.
MANY_RETURNS = replace(SANDBOX, build=lambda: sandbox_data.seed(returns=450))


def _run(client: TestClient, headers: dict[str, str], run_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/sync-job-run/{run_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _cached_ids(client: TestClient, headers: dict[str, str], account: str) -> list[str]:
    """Every cached return id, duplicates kept (there must be none)."""
    pages = walk_pages(client, "/v1/unified_cache/returns", headers,
                       {"integrated_account_id": account, "limit": 200})  # fmt: skip
    return [r["id"] for page in pages for r in page]


def _pages_done(client: TestClient, headers: dict[str, str], run_id: str, pages: int):
    return lambda: _run(client, headers, run_id)["resource_stats"]["wms/returns"]["pages"] >= pages


def test_a_worker_killed_mid_run_leaves_a_failed_run_and_a_clean_cache(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
    processes: Processes,
) -> None:
    upstream = upstream_for(MANY_RETURNS)
    upstream.state.delay_s = 0.3
    job = create_job(client, auth_headers, RETURNS_JOB)
    run_id = start_run(client, auth_headers, job["id"], upstream.account_id)
    processes.start("worker", "worker", "--queue", "sync")
    wait_until(_pages_done(client, auth_headers, run_id, 2), timeout=60)
    processes.kill("worker")  # and its work horse, mid-page

    stuck = _run(client, auth_headers, run_id)
    assert stuck["status"] == "running"
    cached = _cached_ids(client, auth_headers, upstream.account_id)
    assert len(cached) == len(set(cached)) == stuck["resource_stats"]["wms/returns"]["records"]

    # rq-scheduler runs the reaper every minute; once the heartbeat is stale it fails the run.
    later = utcnow() + timedelta(seconds=settings.sync_run_stale_s + 1)
    assert reap(settings, redis_client, now=later) == {"failed": 1, "requeued": 0, "admitted": 0}
    failed = _run(client, auth_headers, run_id)
    assert failed["status"] == "failed" and "stopped answering" in failed["error"]
    assert _cached_ids(client, auth_headers, upstream.account_id) == cached  # nothing deleted

    upstream.state.delay_s = 0
    again = start_run(client, auth_headers, job["id"], upstream.account_id)
    work(redis_client)
    assert _run(client, auth_headers, again)["status"] == "completed"
    cached = _cached_ids(client, auth_headers, upstream.account_id)
    assert sorted(cached) == sorted(upstream.data.returns)


def test_redis_lost_mid_run_the_run_still_ends_and_the_cache_converges(
    private_redis: RedisServer,
    make_token: Callable[..., str],
    upstream_for: Callable[..., Any],
    processes: Processes,
) -> None:
    settings = get_settings()
    assert settings.redis_url == private_redis.url
    headers = bearer(make_token("development"))
    upstream = upstream_for(MANY_RETURNS)
    upstream.state.delay_s = 0.3
    with TestClient(create_app(settings)) as api:
        job = create_job(api, headers, RETURNS_JOB)
        run_id = start_run(api, headers, job["id"], upstream.account_id)
        worker = processes.start("worker", "worker", "--queue", "sync")
        wait_until(_pages_done(api, headers, run_id, 2), timeout=60)

        private_redis.crash()
        private_redis.start()  # empty: the queue, the job and the worker's registration are gone
        wait_until(lambda: _run(api, headers, run_id)["status"] != "running", timeout=60)
        ended = _run(api, headers, run_id)
        assert ended["status"] == "completed", ended  # the database, not Redis, holds a run
        cached = _cached_ids(api, headers, upstream.account_id)
        assert sorted(cached) == sorted(upstream.data.returns)

        if worker.poll() is not None:
            # RQ's worker exits when it loses Redis; a supervisor starts it again.
            processes.start("worker-again", "worker", "--queue", "sync")
        upstream.state.delay_s = 0
        again = start_run(api, headers, job["id"], upstream.account_id)
        wait_until(lambda: _run(api, headers, again)["status"] == "completed", timeout=60)
        assert sorted(_cached_ids(api, headers, upstream.account_id)) == sorted(
            upstream.data.returns
        )
