"""Retention: the daily queue task that deletes what the service no longer needs to keep.

Per table, rows older than their setting's number of days (0 keeps them forever):
API-log rows; delivered outbox events, with their finished deliveries and attempts; delivery
attempts; spent or expired link tokens. Deletes run in bounded batches, each its own short
transaction, so it never holds a long lock. rq-scheduler runs it daily (UTC);
``switchyard db prune`` runs it at once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa
import structlog
from sqlmodel import col, select

from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.tables.api_log import ApiLogEntry
from platform_api.tables.common import utcnow
from platform_api.tables.link_token import LinkToken
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.webhook import PENDING, WebhookAttempt, WebhookDelivery

log = structlog.get_logger(__name__)

BATCH = 5_000
JOB_ID = "switchyard-retention"
CRON = "17 3 * * *"  # daily, 03:17 UTC: off the hour most other jobs pick


def _in_batches(
    settings: Settings, select_ids: sa.Select, *deletes: Callable[[list[str]], sa.Delete]
) -> int:
    """Run ``deletes`` (in order) for what ``select_ids`` finds, ``BATCH`` ids per transaction;
    returns how many ids were found."""
    total = 0
    while True:
        with session_scope(settings) as session:
            ids = list(session.execute(select_ids.limit(BATCH)).scalars())
            if not ids:
                return total
            for delete in deletes:
                session.execute(delete(ids))
        total += len(ids)


def prune(settings: Settings, now: datetime | None = None) -> dict[str, int]:
    """Delete every row past its retention; returns the rows deleted per table."""
    now = now or utcnow()
    deleted: dict[str, int] = {}

    def cutoff(days: int) -> datetime | None:
        return now - timedelta(days=days) if days > 0 else None

    if (before := cutoff(settings.retention_api_log_days)) is not None:
        deleted["api_log"] = _in_batches(
            settings,
            select(col(ApiLogEntry.id)).where(col(ApiLogEntry.created_at) < before),
            lambda ids: sa.delete(ApiLogEntry).where(col(ApiLogEntry.id).in_(ids)),
        )
    if (before := cutoff(settings.retention_outbox_days)) is not None:
        pending = select(col(WebhookDelivery.id)).where(
            col(WebhookDelivery.event_id) == col(OutboxEvent.id),
            col(WebhookDelivery.status) == PENDING,
        )
        finished_events = select(col(OutboxEvent.id)).where(
            col(OutboxEvent.dispatched_at).is_not(None),
            col(OutboxEvent.created_at) < before,
            ~pending.exists(),
        )
        # Attempts go with their deliveries (ON DELETE CASCADE), deliveries with the event.
        deleted["outbox_event"] = _in_batches(
            settings,
            finished_events,
            lambda ids: sa.delete(WebhookDelivery).where(col(WebhookDelivery.event_id).in_(ids)),
            lambda ids: sa.delete(OutboxEvent).where(col(OutboxEvent.id).in_(ids)),
        )
    if (before := cutoff(settings.retention_attempt_days)) is not None:
        deleted["webhook_attempt"] = _in_batches(
            settings,
            select(col(WebhookAttempt.id)).where(
                col(WebhookAttempt.finished_at).is_not(None),
                col(WebhookAttempt.started_at) < before,
            ),
            lambda ids: sa.delete(WebhookAttempt).where(col(WebhookAttempt.id).in_(ids)),
        )
    if (before := cutoff(settings.retention_link_token_days)) is not None:
        spent = sa.or_(
            sa.and_(col(LinkToken.used_at).is_not(None), col(LinkToken.used_at) < before),
            col(LinkToken.expires_at) < before,
        )
        deleted["link_token"] = _in_batches(
            settings,
            select(col(LinkToken.id)).where(spent),
            lambda ids: sa.delete(LinkToken).where(col(LinkToken.id).in_(ids)),
        )
    log.info("retention_pruned", **deleted)
    return deleted


def prune_job() -> dict[str, int]:
    """The RQ job rq-scheduler runs daily (a worker process reads its own settings)."""
    return prune(get_settings())
