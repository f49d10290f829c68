"""The dispatcher: turns outbox events into deliveries and keeps every due delivery enqueued.

The database is the source of truth; Redis only carries work. Each pass

1. fans undispatched outbox events out into one delivery row per subscribed, active webhook
   (and marks the events dispatched) in one transaction, then enqueues RQ jobs for them;
2. sweeps due, pending, unleased deliveries whose RQ job is not waiting in Redis — retries
   falling due, jobs lost with a Redis restart or a failed enqueue, deliveries a killed
   worker left behind — and enqueues them again.

So a crash of the API, the worker, Redis or the dispatcher itself between commit and
delivery only delays an event. A commit that records an event wakes the dispatcher at once
(``kick``); otherwise it polls every ``webhook_dispatch_interval_seconds``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from datetime import datetime, timedelta

import redis
import sqlalchemy as sa
import structlog
from rq.job import Job, JobStatus
from sqlmodel import Session, col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.event_types import matches
from platform_api.ids import new_id
from platform_api.queueing.queues import WEBHOOKS, get_queue
from platform_api.queueing.task_paths import DELIVER_WEBHOOKS
from platform_api.tables.common import as_utc, utcnow
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.webhook import PENDING, Webhook, WebhookDelivery
from platform_api.webhooks.attempts import lease_seconds
from platform_api.webhooks.kick import KICK_KEY

log = structlog.get_logger(__name__)

FAN_OUT_LIMIT = 500
SWEEP_LIMIT = 1000
# Jobs in these states will still run; anything else (or no job at all) means "enqueue again".
_LIVE = {JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


def fan_out(
    session: Session, settings: Settings, now: datetime, limit: int = FAN_OUT_LIMIT
) -> list[tuple[str, list[str]]]:
    """Create the deliveries of up to ``limit`` undispatched events and mark the events
    dispatched; returns the RQ jobs (id, delivery ids) to enqueue once this commits."""
    statement = (
        select(OutboxEvent)
        .where(col(OutboxEvent.dispatched_at).is_(None))
        .order_by(col(OutboxEvent.created_at), col(OutboxEvent.id))
        .limit(limit)
    )
    if session.get_bind().dialect.name == "postgresql":
        # Two dispatchers split the backlog instead of waiting on each other.
        statement = statement.with_for_update(skip_locked=True)
    events = session.exec(statement).all()
    if not events:
        return []
    environments = {e.environment_id for e in events}
    webhooks = session.exec(
        select(Webhook)
        .where(col(Webhook.environment_id).in_(environments))
        .where(col(Webhook.is_active).is_(True))
    ).all()
    by_environment: dict[str, list[Webhook]] = defaultdict(list)
    for webhook in webhooks:
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
    if rows:
        session.execute(sa.insert(WebhookDelivery), rows)
    session.execute(
        sa.update(OutboxEvent)
        .where(col(OutboxEvent.id).in_([e.id for e in events]))
        .values(dispatched_at=now)
        .execution_options(synchronize_session=False)
    )
    return batches


def _subscribed(webhook: Webhook, event: OutboxEvent) -> bool:
    # Events from before the webhook was (re)activated are never sent to it.
    if as_utc(event.created_at) < as_utc(webhook.active_since):  # type: ignore[operator]  # both set
        return False
    if event.target_webhook_id is not None:
        return event.target_webhook_id == webhook.id
    return matches(webhook.event_types, event.event_type)


def _batches(delivery_ids: list[str], settings: Settings) -> list[tuple[str, list[str]]]:
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


def sweep(
    session: Session,
    connection: redis.Redis,
    settings: Settings,
    now: datetime,
    limit: int = SWEEP_LIMIT,
) -> list[tuple[str, list[str]]]:
    """Give new jobs to due, pending, unleased deliveries that no waiting RQ job will run:
    retries falling due, jobs Redis lost, deliveries a dead worker left behind."""
    grace = now - timedelta(seconds=settings.webhook_requeue_grace_seconds)
    candidates = session.execute(
        sa.select(col(WebhookDelivery.id), col(WebhookDelivery.job_id))
        .where(col(WebhookDelivery.status) == PENDING)
        .where(col(WebhookDelivery.next_attempt_at) <= now)
        .where(
            sa.or_(
                col(WebhookDelivery.locked_until).is_(None),
                col(WebhookDelivery.locked_until) < now,
            )
        )
        .where(
            sa.or_(
                col(WebhookDelivery.job_id).is_(None),
                col(WebhookDelivery.enqueued_at) < grace,
            )
        )
        .order_by(col(WebhookDelivery.next_attempt_at))
        .limit(limit)
    ).all()
    live = _live_job_ids(connection, {job_id for _, job_id in candidates if job_id})
    orphans = [delivery_id for delivery_id, job_id in candidates if job_id not in live]
    batches = _batches(orphans, settings)
    if batches:
        session.execute(
            sa.update(WebhookDelivery),
            [
                {"id": delivery_id, "job_id": job_id, "enqueued_at": now}
                for job_id, chunk in batches
                for delivery_id in chunk
            ],
        )
    return batches


def enqueue(
    connection: redis.Redis, batches: list[tuple[str, list[str]]], settings: Settings
) -> None:
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


def dispatch_once(settings: Settings, connection: redis.Redis) -> int:
    """One pass (fan out, then sweep); returns the number of deliveries enqueued."""
    with session_scope(settings) as session:
        batches = fan_out(session, settings, utcnow())
    try:
        enqueue(connection, batches, settings)
    except redis.RedisError as exc:
        # The rows are committed; a later sweep enqueues them once Redis answers again.
        log.warning("webhook_enqueue_failed", error=str(exc))
        raise
    total = sum(len(ids) for _, ids in batches)
    with session_scope(settings) as session:
        swept = sweep(session, connection, settings, utcnow())
    enqueue(connection, swept, settings)
    return total + sum(len(ids) for _, ids in swept)


def run(settings: Settings, connection: redis.Redis, stop: threading.Event | None = None) -> None:
    """Dispatch until ``stop`` is set, waking on kicks or every dispatch interval."""
    stop = stop or threading.Event()
    interval = settings.webhook_dispatch_interval_seconds
    log.info("webhook_dispatcher_started", interval=interval)
    while not stop.is_set():
        try:
            enqueued = dispatch_once(settings, connection)
            if enqueued:
                continue  # there may be more: go again before waiting
            # Wait for a kick; several kicks in a row collapse into one pass.
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
