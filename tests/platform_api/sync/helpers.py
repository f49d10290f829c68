"""What the sync tests share: a worker that drains the sync queue, jobs and runs by the API,
a lease taken away."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import redis
from fastapi.testclient import TestClient
from rq import Worker
from rq.serializers import JSONSerializer

from core.settings import Settings
from platform_api.queueing.queues import DEFAULT, SYNC, get_queue
from platform_api.sync.reaper import reap
from platform_api.tables.common import utcnow

RETURNS_JOB = {"integration_name": "sandbox", "resources": [{"resource": "wms/returns"}]}


def work(redis_client: redis.Redis) -> None:
    """One RQ worker drains the housekeeping queue (cron ticks) and the sync queue, as
    `switchyard worker` would (fork included)."""
    queues = [get_queue(name, redis_client) for name in (DEFAULT, SYNC)]
    Worker(queues, connection=redis_client, serializer=JSONSerializer).work(burst=True)


def create_job(client: TestClient, headers: dict[str, str], body: dict[str, Any]) -> dict:
    response = client.post("/v1/sync-job", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def start_run(client: TestClient, headers: dict[str, str], job_id: str, account: str) -> str:
    """Queue a run of the job for the account; returns its id."""
    body = {"sync_job_id": job_id, "integrated_account_id": account}
    response = client.post("/v1/sync-job-run", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def take_lease_away(
    how: str,
    client: TestClient,
    headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    run_id: str,
) -> None:
    """End a claimed run's lease as the reaper does (``how="reaper"``: the run has gone
    stale) or as a stop request does (``how="stop"``)."""
    if how == "reaper":
        later = utcnow() + timedelta(seconds=settings.sync_run_stale_s + 1)
        assert reap(settings, redis_client, now=later)["failed"] == 1
    else:
        stopped = client.post(f"/v1/sync-job-run/{run_id}/stop", headers=headers)
        assert stopped.status_code == 200, stopped.text
