"""The reaper: no sync run is left ``running`` by a worker that died, nor ``queued`` without a
queue job. rq-scheduler runs it every minute."""

from __future__ import annotations

from datetime import datetime, timedelta

import redis
import sqlalchemy as sa
import structlog
from rq.job import Job
from sqlmodel import col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services.events import record_event
from platform_api.sync.jobs import enqueue
from platform_api.tables.common import as_utc, utcnow
from platform_api.tables.sync import SyncJobRun

log = structlog.get_logger(__name__)


def reap(
    settings: Settings, connection: redis.Redis, now: datetime | None = None
) -> dict[str, int]:
    """Fail running runs whose heartbeat is older than ``sync_run_stale_s``; queue again the
    queued runs that old whose queue job is missing (Redis lost it, or was down at commit)."""
    now = now or utcnow()
    stale = now - timedelta(seconds=settings.sync_run_stale_s)
    failed = requeued = 0
    with session_scope(settings) as session:
        lost = session.exec(
            select(SyncJobRun)
            .where(col(SyncJobRun.status).in_(("running", "rate_limited")))
            .where(
                sa.func.coalesce(col(SyncJobRun.heartbeat_at), col(SyncJobRun.created_at)) < stale
            )  # fmt: skip
            .with_for_update(skip_locked=True)
        ).all()
        for run in lost:
            since = as_utc(run.heartbeat_at or run.created_at)
            run.status, run.finished_at = "failed", now
            run.error = f"the worker running it stopped answering (last heartbeat {since})"
            session.add(run)
            record_event(
                session,
                environment_id=run.environment_id,
                event_type="sync_job_run:failed",
                payload={"sync_job_run_id": run.id, "sync_job_id": run.sync_job_id,
                         "integrated_account_id": run.integrated_account_id,
                         "error": run.error, "resource_stats": run.resource_stats},
                settings=settings, webhook_id=run.webhook_id,
            )  # fmt: skip
            failed += 1
        waiting = session.exec(
            select(SyncJobRun.id)
            .where(col(SyncJobRun.status) == "queued")
            .where(col(SyncJobRun.created_at) < stale)
        ).all()
    for run_id in waiting:
        if not Job.exists(run_id, connection=connection):
            enqueue(connection, run_id)
            requeued += 1
    if failed or requeued:
        log.warning("sync_runs_reaped", failed=failed, requeued=requeued)
    return {"failed": failed, "requeued": requeued}
