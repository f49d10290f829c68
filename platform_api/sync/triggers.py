"""Cron triggers: run a sync job for an account on a schedule (UTC), through rq-scheduler.

A trigger's row is the source of truth; its rq-scheduler job (id ``sync-cron-<trigger id>``)
is registered when the row commits, cancelled when it is deleted, and every scheduler start
re-registers all of them and drops jobs whose trigger is gone, so triggers survive a restart
of every process (rq-scheduler lets one scheduler at a time enqueue, so a tick fires once).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import redis
import structlog
from croniter import CroniterError, croniter
from rq_scheduler import Scheduler
from sqlalchemy import event
from sqlmodel import Session, col, select

from core.errors import ApiError, invalid_request, not_found
from core.settings import Settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.pagination import PageParams, paginate
from platform_api.queueing.queues import DEFAULT
from platform_api.queueing.scheduler import make_scheduler
from platform_api.queueing.task_paths import FIRE_CRON_TRIGGER
from platform_api.sync import jobs
from platform_api.tables.common import as_utc, isoformat, utcnow
from platform_api.tables.sync import (
    SyncJobCronTrigger,
    SyncJobCronTriggerCreate,
    SyncJobRunCreate,
)

log = structlog.get_logger(__name__)

JOB_PREFIX = "sync-cron-"  # RQ ids allow letters, digits, "_" and "-"


def next_run_at(expression: str, after: datetime | None = None) -> datetime:
    return croniter(expression, as_utc(after or utcnow())).get_next(datetime)


def shortest_interval_s(expression: str) -> int:
    """The shortest time between two firings of a valid five-field expression.

    From its minute and hour fields: the gaps between the times of day it fires at, and from
    the last of a day to the first of the next (counted even when the day fields skip the next
    day, which only makes the real gap longer)."""
    minutes, hours = croniter(expression).expanded[:2]
    # croniter keeps a bare '*' as is
    minutes = range(60) if minutes == ["*"] else minutes
    hours = range(24) if hours == ["*"] else hours
    times = sorted(int(h) * 60 + int(m) for h in hours for m in minutes)
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    gaps.append(times[0] + 24 * 60 - times[-1])
    return min(gaps) * 60


def check_expression(expression: str, settings: Settings) -> None:
    """400 unless ``expression`` is five cron fields that fire, no more often than allowed."""
    if not croniter.is_valid(expression) or len(expression.split()) != 5:
        raise invalid_request(
            f"cron_expression: {expression!r} is not a five-field cron expression"
        )
    try:
        next_run_at(expression)
    except CroniterError as exc:  # five valid fields that match no date, e.g. 0 0 31 2 *
        raise invalid_request(
            f"cron_expression: {expression!r} never fires (no date matches it)"
        ) from exc
    shortest, allowed = shortest_interval_s(expression), settings.sync_cron_min_interval_s
    if shortest < allowed:
        raise invalid_request(
            f"cron_expression: {expression!r} fires {shortest} s apart; the shortest interval "
            f"allowed is {allowed} s (SWITCHYARD_SYNC_CRON_MIN_INTERVAL_S)"
        )


def serialize(trigger: SyncJobCronTrigger) -> dict[str, Any]:
    return {
        "id": trigger.id,
        "sync_job_id": trigger.sync_job_id,
        "integrated_account_id": trigger.integrated_account_id,
        "webhook_id": trigger.webhook_id,
        "cron_expression": trigger.cron_expression,
        "next_run_at": isoformat(next_run_at(trigger.cron_expression)),
        "created_at": isoformat(trigger.created_at),
    }


def _register(scheduler: Scheduler, trigger: SyncJobCronTrigger) -> None:
    job_id = JOB_PREFIX + trigger.id
    scheduler.cancel(job_id)
    scheduler.cron(
        trigger.cron_expression,
        func=FIRE_CRON_TRIGGER,
        args=[trigger.id],
        id=job_id,
        # A tick only creates a run: housekeeping work, never behind a long sync run.
        queue_name=DEFAULT,
        use_local_timezone=False,
        description=f"sync job {trigger.sync_job_id} for {trigger.integrated_account_id}",
    )


def create_trigger(
    session: Session,
    connection: redis.Redis,
    *,
    environment_id: str,
    data: SyncJobCronTriggerCreate,
    settings: Settings,
) -> SyncJobCronTrigger:
    check_expression(data.cron_expression, settings)
    # The same checks as a run: the job, the account of its integration, the webhook.
    jobs.check_run_request(session, environment_id=environment_id, data=data)
    trigger = SyncJobCronTrigger(
        id=new_id("scron"),
        environment_id=environment_id,
        sync_job_id=data.sync_job_id,
        integrated_account_id=data.integrated_account_id,
        webhook_id=data.webhook_id,
        cron_expression=data.cron_expression,
    )
    session.add(trigger)

    def register(_: Session) -> None:
        try:
            _register(make_scheduler(connection), trigger)
        except redis.RedisError:
            # The row is committed; the scheduler registers it when it next starts.
            log.error("sync_trigger_not_scheduled", trigger_id=trigger.id, exc_info=True)

    event.listen(session, "after_commit", register, once=True)
    return trigger


def get_trigger(session: Session, *, environment_id: str, trigger_id: str) -> SyncJobCronTrigger:
    trigger = session.get(SyncJobCronTrigger, trigger_id)
    if trigger is None or trigger.environment_id != environment_id:
        raise not_found(f"sync job cron trigger {trigger_id}")
    return trigger


def list_triggers(session: Session, *, environment_id: str, params: PageParams) -> dict[str, Any]:
    statement = select(SyncJobCronTrigger).where(
        col(SyncJobCronTrigger.environment_id) == environment_id
    )
    return paginate(
        session, statement, id_column=col(SyncJobCronTrigger.id), params=params,
        scope=f"sync-job-cron-trigger:{environment_id}", serialize=serialize,
    )  # fmt: skip


def cancel_after_commit(session: Session, connection: redis.Redis, trigger_ids: list[str]) -> None:
    def cancel(_: Session) -> None:
        try:
            scheduler = make_scheduler(connection)
            for trigger_id in trigger_ids:
                scheduler.cancel(JOB_PREFIX + trigger_id)
        except redis.RedisError:
            # A tick of a deleted trigger finds no row and cancels its own schedule.
            log.error("sync_trigger_not_unscheduled", trigger_ids=trigger_ids, exc_info=True)

    event.listen(session, "after_commit", cancel, once=True)


def delete_trigger(
    session: Session, connection: redis.Redis, *, trigger: SyncJobCronTrigger
) -> None:
    session.delete(trigger)
    cancel_after_commit(session, connection, [trigger.id])


def triggers_of_job(session: Session, job_id: str) -> list[str]:
    return list(
        session.exec(
            select(SyncJobCronTrigger.id).where(col(SyncJobCronTrigger.sync_job_id) == job_id)
        ).all()
    )


def reconcile(settings: Settings, scheduler: Scheduler) -> int:
    """Register every trigger the database holds; cancel scheduled ones it does not."""
    with session_scope(settings) as session:
        triggers = session.exec(select(SyncJobCronTrigger)).all()
        session.expunge_all()
    wanted = {JOB_PREFIX + t.id for t in triggers}
    for job in scheduler.get_jobs():
        if job.id.startswith(JOB_PREFIX) and job.id not in wanted:
            scheduler.cancel(job)
    for trigger in triggers:
        _register(scheduler, trigger)
    return len(triggers)


def fire(settings: Settings, connection: redis.Redis, trigger_id: str) -> str | None:
    """What a tick does: queue a run of the trigger's job (None when one is under way or the
    trigger is gone; a gone trigger's schedule is cancelled)."""
    with session_scope(settings) as session:
        trigger = session.get(SyncJobCronTrigger, trigger_id)
        if trigger is None:
            make_scheduler(connection).cancel(JOB_PREFIX + trigger_id)
            return None
        data = SyncJobRunCreate(
            sync_job_id=trigger.sync_job_id,
            integrated_account_id=trigger.integrated_account_id,
            webhook_id=trigger.webhook_id,
        )
        try:
            run = jobs.create_run(
                session, connection, environment_id=trigger.environment_id, data=data,
                settings=settings,
            )  # fmt: skip
        except ApiError as exc:
            log.warning("sync_trigger_skipped", trigger_id=trigger_id, reason=exc.message)
            return None
        return run.id
