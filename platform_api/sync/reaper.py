"""The reaper: no sync run is left ``running`` by a worker that died, nor ``queued`` without a
queue job, nor waiting while its environment has a free place. rq-scheduler runs it every
minute.

Failing a run ends its worker's lease (``lease_token`` is raised in the same UPDATE), so a
worker that was only slow, not dead, writes nothing more to the run it lost."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

import redis
import sqlalchemy as sa
import structlog
from rq.job import Job
from sqlalchemy.engine import CursorResult
from sqlmodel import Session, col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services.events import record_event
from platform_api.sync.admission import admit_and_enqueue, enqueue, environments_waiting
from platform_api.sync.runner import LEASED_STATES
from platform_api.tables.common import as_utc, utcnow
from platform_api.tables.sync import SyncJobRun

log = structlog.get_logger(__name__)


def _last_sign_of_life() -> sa.ColumnElement[datetime]:
    return sa.func.coalesce(col(SyncJobRun.heartbeat_at), col(SyncJobRun.created_at))


def _fail_if_still_stale(
    session: Session, run: SyncJobRun, *, stale: datetime, now: datetime, error: str
) -> bool:
    """Fail the run and end its lease, unless its worker wrote since it was read (a heartbeat,
    a new token, its end): a compare-and-set, so a live run is never failed."""
    result = session.execute(
        sa.update(SyncJobRun)
        .where(
            col(SyncJobRun.id) == run.id,
            col(SyncJobRun.lease_token) == run.lease_token,
            col(SyncJobRun.status).in_(LEASED_STATES),
            _last_sign_of_life() < stale,
        )
        .values(
            status="failed",
            error=error,
            finished_at=now,
            lease_token=col(SyncJobRun.lease_token) + 1,
        )
        .execution_options(synchronize_session=False)
    )
    return cast("CursorResult[Any]", result).rowcount == 1


def reap(
    settings: Settings, connection: redis.Redis, now: datetime | None = None
) -> dict[str, int]:
    """Fail running runs whose heartbeat is older than ``sync_run_stale_s``; queue again the
    runs admitted that long ago whose queue job is missing (Redis lost it, or was down at
    commit); admit waiting runs where places are free (a process died before it could)."""
    now = now or utcnow()
    stale = now - timedelta(seconds=settings.sync_run_stale_s)
    failed = requeued = 0
    with session_scope(settings) as session:
        lost = session.exec(
            select(SyncJobRun)
            .where(col(SyncJobRun.status).in_(LEASED_STATES))
            .where(_last_sign_of_life() < stale)
            .with_for_update(skip_locked=True)
        ).all()
        for run in lost:
            since = as_utc(run.heartbeat_at or run.created_at)
            error = f"the worker running it stopped answering (last heartbeat {since})"
            if not _fail_if_still_stale(session, run, stale=stale, now=now, error=error):
                continue
            record_event(
                session,
                environment_id=run.environment_id,
                event_type="sync_job_run:failed",
                payload={"sync_job_run_id": run.id, "sync_job_id": run.sync_job_id,
                         "integrated_account_id": run.integrated_account_id,
                         "error": error, "resource_stats": run.resource_stats},
                settings=settings, webhook_id=run.webhook_id,
            )  # fmt: skip
            failed += 1
        waiting = session.exec(
            select(SyncJobRun.id)
            .where(col(SyncJobRun.status) == "queued")
            .where(col(SyncJobRun.admitted_at) < stale)
        ).all()
        unadmitted = environments_waiting(session)
    for run_id in waiting:
        if not Job.exists(run_id, connection=connection):
            enqueue(connection, run_id)
            requeued += 1
    admitted = sum(
        len(admit_and_enqueue(settings, connection, environment_id=environment_id))
        for environment_id in unadmitted
    )
    if failed or requeued or admitted:
        log.warning("sync_runs_reaped", failed=failed, requeued=requeued, admitted=admitted)
    return {"failed": failed, "requeued": requeued, "admitted": admitted}
