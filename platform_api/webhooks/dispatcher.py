"""The dispatcher: turns outbox events into deliveries and keeps every due delivery enqueued.

The database is the source of truth; Redis only carries work. Each pass

1. fans undispatched outbox events out into one delivery row per subscribed, active webhook
   (and marks the events dispatched) in one transaction, then enqueues RQ jobs for them;
2. sweeps due, pending, unleased deliveries whose RQ job is not waiting in Redis — retries
   falling due, jobs lost with a Redis restart or a failed enqueue, deliveries a killed
   worker left behind — and enqueues them again.

So a crash of the API, the worker, Redis or the dispatcher itself between commit and
delivery only delays an event. A commit that records an event wakes the dispatcher at once
(``kick``); otherwise it polls every ``webhook_dispatch_interval_seconds``. A pass that left
events behind (it reached its limit) is followed by the next at once.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
import sqlalchemy as sa
import structlog
from rq.job import Job, JobStatus
from sqlmodel import Session

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.event_types import matches
from platform_api.ids import new_id
from platform_api.queueing.queues import WEBHOOKS, get_queue
from platform_api.queueing.task_paths import DELIVER_WEBHOOKS
from platform_api.tables.common import as_utc, utcnow
from platform_api.tables.webhook import PENDING
from platform_api.webhooks.attempts import lease_seconds
from platform_api.webhooks.kick import KICK_KEY
from platform_api.webhooks.tables import (
    DELIVERY,
    OUTBOX,
    WEBHOOK,
    delivery_transaction,
    in_list,
    insert_rows,
)

log = structlog.get_logger(__name__)

FAN_OUT_LIMIT = 500
SWEEP_LIMIT = 1000
# Jobs in these states will still run; anything else (or no job at all) means "enqueue again".
_LIVE = {JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


# Statements built once (see ``tables``); parameters are bound at each execution.
# SKIP LOCKED: two dispatchers split the backlog instead of waiting on each other (SQLite,
# with one writer at a time, leaves the clause out).
_UNDISPATCHED = (
    sa.select(
        OUTBOX.c.id,
        OUTBOX.c.environment_id,
        OUTBOX.c.event_type,
        OUTBOX.c.created_at,
        OUTBOX.c.target_webhook_id,
    )
    .where(OUTBOX.c.dispatched_at.is_(None))
    .order_by(OUTBOX.c.created_at, OUTBOX.c.id)
    .limit(sa.bindparam("limit"))
    .with_for_update(skip_locked=True)
)
_SUBSCRIBERS = (
    sa.select(WEBHOOK.c.id, WEBHOOK.c.environment_id, WEBHOOK.c.event_types, WEBHOOK.c.active_since)
    .where(in_list(WEBHOOK.c.environment_id, "environments"))
    .where(WEBHOOK.c.is_active.is_(True))
)
_MARK_DISPATCHED = (
    sa.update(OUTBOX).where(in_list(OUTBOX.c.id)).values(dispatched_at=sa.bindparam("now"))
)


Jobs = list[tuple[str, list[str]]]  # RQ job id, the delivery ids it sends


def fan_out(
    session: Session, settings: Settings, now: datetime, limit: int = FAN_OUT_LIMIT
) -> Jobs:
    """Create the deliveries of up to ``limit`` undispatched events and mark the events
    dispatched; returns the RQ jobs (id, delivery ids) to enqueue once this commits."""
    return fan_out_events(session, settings, now, limit)[0]


def fan_out_events(
    session: Session, settings: Settings, now: datetime, limit: int = FAN_OUT_LIMIT
) -> tuple[Jobs, bool]:
    """``fan_out``, and whether it took ``limit`` events (so more may be waiting)."""
    connection = session.connection()
    delivery_transaction(connection)
    events = connection.execute(_UNDISPATCHED, {"limit": limit}).all()
    if not events:
        return [], False
    environments = sorted({e.environment_id for e in events})
    by_environment: dict[str, list[sa.Row]] = defaultdict(list)
    for webhook in connection.execute(_SUBSCRIBERS, {"environments": environments}):
        by_environment[webhook.environment_id].append(webhook)
    pairs = [
        (event, webhook)
        for event in events
        for webhook in by_environment[event.environment_id]
        if _subscribed(webhook, event)
    ]
    # Ids sort by millisecond only; handing out sorted ids in event order keeps the delivery
    # log (newest first, by id) in event order within one pass.
    ids = sorted(new_id("wdl") for _ in pairs)
    batches = _batches(ids, settings)
    job_of = {delivery_id: job_id for job_id, chunk in batches for delivery_id in chunk}
    rows = [
        {
            "id": delivery_id,
            "webhook_id": webhook.id,
            "environment_id": event.environment_id,
            "event_id": event.id,
            "event_type": event.event_type,
            "status": PENDING,
            "attempt_count": 0,
            "next_attempt_at": now,
            "job_id": job_of[delivery_id],
            "enqueued_at": now,
            "created_at": now,
            "updated_at": now,
        }
        for delivery_id, (event, webhook) in zip(ids, pairs, strict=True)
    ]
    insert_rows(connection, DELIVERY, rows)
    connection.execute(_MARK_DISPATCHED, {"ids": [e.id for e in events], "now": now})
    return batches, len(events) >= limit


def _subscribed(webhook: sa.Row, event: sa.Row) -> bool:
    # Events from before the webhook was (re)activated are never sent to it.
    if as_utc(event.created_at) < as_utc(webhook.active_since):  # type: ignore[operator]  # both set
        return False
    if event.target_webhook_id is not None:
        return bool(event.target_webhook_id == webhook.id)
    return matches(webhook.event_types, event.event_type)


def _batches(delivery_ids: list[str], settings: Settings) -> Jobs:
    size = settings.webhook_batch_size
    return [
        (new_id("whjob"), delivery_ids[start : start + size])
        for start in range(0, len(delivery_ids), size)
    ]


def _live_job_ids(connection: redis.Redis, job_ids: set[str]) -> set[str]:
    if not job_ids:
        return set()
    ordered = sorted(job_ids)
    pipe = connection.pipeline(transaction=False)
    for job_id in ordered:
        pipe.hget(Job.key_for(job_id), "status")
    statuses = pipe.execute()
    return {
        job_id
        for job_id, status in zip(ordered, statuses, strict=True)
        if status is not None and status.decode() in _LIVE
    }


_DUE_WITHOUT_JOB = (
    sa.select(DELIVERY.c.id, DELIVERY.c.job_id)
    .where(DELIVERY.c.status == PENDING)
    .where(DELIVERY.c.next_attempt_at <= sa.bindparam("now"))
    .where(sa.or_(DELIVERY.c.locked_until.is_(None), DELIVERY.c.locked_until < sa.bindparam("now")))
    .where(sa.or_(DELIVERY.c.job_id.is_(None), DELIVERY.c.enqueued_at < sa.bindparam("grace")))
    .order_by(DELIVERY.c.next_attempt_at)
    .limit(sa.bindparam("limit"))
)
_GIVE_JOB = (
    sa.update(DELIVERY)
    .where(DELIVERY.c.id == sa.bindparam("delivery_id"))
    .values(job_id=sa.bindparam("job"), enqueued_at=sa.bindparam("now"))
)


def sweep(
    session: Session,
    connection: redis.Redis,
    settings: Settings,
    now: datetime,
    limit: int = SWEEP_LIMIT,
) -> Jobs:
    """Give new jobs to due, pending, unleased deliveries that no waiting RQ job will run:
    retries falling due, jobs Redis lost, deliveries a dead worker left behind."""
    return sweep_due(session, connection, settings, now, limit)[0]


def sweep_due(
    session: Session,
    connection: redis.Redis,
    settings: Settings,
    now: datetime,
    limit: int = SWEEP_LIMIT,
) -> tuple[Jobs, bool]:
    """``sweep``, and whether it gave jobs and found ``limit`` candidates (so more may be
    waiting: candidates whose jobs still wait in Redis are found again, and alone they are no
    reason to sweep again at once)."""
    grace = now - timedelta(seconds=settings.webhook_requeue_grace_seconds)
    database = session.connection()
    delivery_transaction(database)
    candidates = database.execute(
        _DUE_WITHOUT_JOB, {"now": now, "grace": grace, "limit": limit}
    ).all()
    live = _live_job_ids(connection, {job_id for _, job_id in candidates if job_id})
    orphans = [delivery_id for delivery_id, job_id in candidates if job_id not in live]
    batches = _batches(orphans, settings)
    if batches:
        database.execute(
            _GIVE_JOB,
            [
                {"delivery_id": delivery_id, "job": job_id, "now": now}
                for job_id, chunk in batches
                for delivery_id in chunk
            ],
        )
    return batches, bool(batches) and len(candidates) >= limit


def enqueue(connection: redis.Redis, batches: Jobs, settings: Settings) -> None:
    """Put one ``deliver`` job per batch on the webhooks queue (in one round trip)."""
    if not batches:
        return
    queue = get_queue(WEBHOOKS, connection)
    queue.enqueue_many(
        [
            queue.prepare_data(
                DELIVER_WEBHOOKS,
                args=(ids,),
                job_id=job_id,
                timeout=int(lease_seconds(settings, len(ids))) + 30,
                result_ttl=300,
                failure_ttl=7 * 24 * 3600,
                description=f"webhook delivery of {len(ids)} event(s)",
            )
            for job_id, ids in batches
        ]
    )


@dataclass(frozen=True)
class Pass:
    enqueued: int  # deliveries
    backlog: bool  # a limit was reached: more may be waiting already


def dispatch_once(settings: Settings, connection: redis.Redis) -> int:
    """One pass (fan out, then sweep); returns the number of deliveries enqueued."""
    return dispatch_pass(settings, connection).enqueued


def dispatch_pass(
    settings: Settings, connection: redis.Redis, fan_out_limit: int = FAN_OUT_LIMIT
) -> Pass:
    """One pass: fan out and enqueue first (a new event's path to its receiver), then sweep."""
    with session_scope(settings) as session:
        batches, more_events = fan_out_events(session, settings, utcnow(), fan_out_limit)
    try:
        enqueue(connection, batches, settings)
    except redis.RedisError as exc:
        # The rows are committed; a later sweep enqueues them once Redis answers again.
        log.warning("webhook_enqueue_failed", error=str(exc))
        raise
    with session_scope(settings) as session:
        swept, more_due = sweep_due(session, connection, settings, utcnow())
    enqueue(connection, swept, settings)
    enqueued = sum(len(ids) for _, ids in batches + swept)
    return Pass(enqueued, more_events or more_due)


def run(settings: Settings, connection: redis.Redis, stop: threading.Event | None = None) -> None:
    """Dispatch until ``stop`` is set, waking on kicks or every dispatch interval."""
    stop = stop or threading.Event()
    interval = settings.webhook_dispatch_interval_seconds
    log.info("webhook_dispatcher_started", interval=interval)
    # The first pass after a wait fans out one job's worth, so a burst's first job is on its
    # way before the rest of the burst is fanned out.
    first_pass = settings.webhook_batch_size
    limit = first_pass
    while not stop.is_set():
        try:
            if dispatch_pass(settings, connection, limit).backlog:
                limit = FAN_OUT_LIMIT
                continue  # go again before waiting
            limit = first_pass
            # Wait for a kick; several kicks in a row collapse into one pass. A commit during
            # the pass left its kick here, so its events are not missed.
            if connection.blpop([KICK_KEY], timeout=interval):
                connection.delete(KICK_KEY)
        except redis.RedisError as exc:
            log.warning("webhook_dispatcher_redis_unavailable", error=str(exc))
            stop.wait(interval)
        except sa.exc.OperationalError as exc:
            log.warning("webhook_dispatcher_database_unavailable", error=str(exc))
            stop.wait(interval)
        except Exception:
            # Never let one bad pass stop the dispatcher; the next pass retries.
            log.exception("webhook_dispatcher_pass_failed")
            stop.wait(interval)
    log.info("webhook_dispatcher_stopped")
