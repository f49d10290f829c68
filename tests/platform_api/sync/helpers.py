"""What the sync tests share: a worker that drains the sync queue, jobs and runs by the API."""

from __future__ import annotations

from typing import Any

import redis
from fastapi.testclient import TestClient
from rq import Worker
from rq.serializers import JSONSerializer

from platform_api.queueing.queues import DEFAULT, SYNC, get_queue

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
