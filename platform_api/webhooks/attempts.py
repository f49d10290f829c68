"""A delivery job's two transactions: claim deliveries before sending, record what happened.

The claim takes a lease on each delivery (and writes the attempt row), so duplicate jobs for
the same delivery — the dispatcher re-enqueues deliveries whose job Redis lost — never send
twice at once; a lease that runs out means the worker died mid-attempt, and the dispatcher
hands the delivery to another job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlmodel import Session, col, select

from platform_api.crypto import decrypt_json
from platform_api.ids import new_id
from platform_api.models.common import isoformat
from platform_api.models.outbox import OutboxEvent
from platform_api.models.webhook import (
    FAILED,
    PENDING,
    SUCCEEDED,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from platform_api.settings import Settings
from platform_api.webhooks.retry import next_delay
from platform_api.webhooks.sender import Outcome
from platform_api.webhooks.signing import envelope_body

INACTIVE = "webhook inactive"
INTERRUPTED = "interrupted: the worker stopped during this attempt"


@dataclass(frozen=True)
class Work:
    """Everything one attempt needs, read in the claim transaction."""

    delivery_id: str
    attempt_id: str
    webhook_id: str
    event_id: str
    url: str
    secret: str
    body: bytes


def lease_seconds(settings: Settings, batch: int) -> float:
    """How long a job may hold its deliveries: every round of sends timing out, plus one."""
    rounds = math.ceil(batch / settings.webhook_send_concurrency)
    return settings.webhook_timeout_seconds * (rounds + 1)


def cancel_pending(session: Session, *, webhook_id: str, now: datetime, reason: str) -> int:
    """Stop every pending delivery of a webhook (deactivated, disabled or deleted)."""
    result = session.execute(
        sa.update(WebhookDelivery)
        .where(col(WebhookDelivery.webhook_id) == webhook_id)
        .where(col(WebhookDelivery.status) == PENDING)
        .values(
            status=FAILED,
            failure_reason=reason,
            next_attempt_at=None,
            locked_until=None,
            completed_at=now,
            updated_at=now,
        )
    )
    return result.rowcount or 0


def claim(
    session: Session, delivery_ids: list[str], settings: Settings, now: datetime
) -> list[Work]:
    """Lease the due, pending, unleased deliveries among ``delivery_ids`` and open attempts."""
    inactive = select(Webhook.id).where(col(Webhook.is_active).is_(False))
    session.execute(
        sa.update(WebhookDelivery)
        .where(col(WebhookDelivery.id).in_(delivery_ids))
        .where(col(WebhookDelivery.status) == PENDING)
        .where(col(WebhookDelivery.webhook_id).in_(inactive))
        .values(status=FAILED, failure_reason=INACTIVE, next_attempt_at=None, completed_at=now)
    )
    lease = now + timedelta(seconds=lease_seconds(settings, len(delivery_ids)))
    # A small slack: the dispatcher and the worker read the clock at slightly different times.
    due_by = now + timedelta(seconds=1)
    claimed = session.execute(
        sa.update(WebhookDelivery)
        .where(col(WebhookDelivery.id).in_(delivery_ids))
        .where(col(WebhookDelivery.status) == PENDING)
        .where(col(WebhookDelivery.next_attempt_at) <= due_by)
        .where(
            sa.or_(
                col(WebhookDelivery.locked_until).is_(None),
                col(WebhookDelivery.locked_until) < now,
            )
        )
        .values(
            locked_until=lease,
            attempt_count=WebhookDelivery.attempt_count + 1,
            updated_at=now,
        )
        .returning(col(WebhookDelivery.id), col(WebhookDelivery.attempt_count))
    ).all()
    if not claimed:
        return []
    numbers = {row[0]: row[1] for row in claimed}
    # An attempt still open under an expired lease was cut short by a dead worker.
    session.execute(
        sa.update(WebhookAttempt)
        .where(col(WebhookAttempt.delivery_id).in_(numbers))
        .where(col(WebhookAttempt.finished_at).is_(None))
        .values(finished_at=now, error=INTERRUPTED)
    )
    rows = session.exec(
        select(WebhookDelivery, Webhook, OutboxEvent)
        .join(Webhook, col(Webhook.id) == col(WebhookDelivery.webhook_id))
        .join(OutboxEvent, col(OutboxEvent.id) == col(WebhookDelivery.event_id))
        .where(col(WebhookDelivery.id).in_(numbers))
    ).all()
    secrets: dict[str, str] = {}
    work = []
    for delivery, webhook, event in rows:
        if webhook.id not in secrets:
            secrets[webhook.id] = decrypt_json(webhook.secret_encrypted, settings)
        attempt_id = new_id("wat")
        session.add(
            WebhookAttempt(
                id=attempt_id, delivery_id=delivery.id, number=numbers[delivery.id], started_at=now
            )
        )
        body = envelope_body(
            event_id=event.id,
            event_type=event.event_type,
            payload=event.payload,
            environment_id=event.environment_id,
            created_at=isoformat(event.created_at),
            webhook_id=webhook.id,
        )
        work.append(
            Work(
                delivery.id,
                attempt_id,
                webhook.id,
                event.id,
                webhook.target_url,
                secrets[webhook.id],
                body,
            )
        )
    return work


def _disable(session: Session, webhook_id: str, reason: str, now: datetime) -> None:
    session.execute(
        sa.update(Webhook)
        .where(col(Webhook.id) == webhook_id)
        .values(is_active=False, disabled_reason=reason, updated_at=now)
    )
    cancel_pending(session, webhook_id=webhook_id, now=now, reason=INACTIVE)


def record(
    session: Session, results: list[tuple[Work, Outcome]], settings: Settings, now: datetime
) -> dict[str, int]:
    """Write each attempt's outcome and decide: succeeded, retry later, or failed."""
    summary = {"succeeded": 0, "retrying": 0, "failed": 0}
    attempts = {
        a.id: a
        for a in session.exec(
            select(WebhookAttempt).where(
                col(WebhookAttempt.id).in_([w.attempt_id for w, _ in results])
            )
        ).all()
    }
    deliveries = {
        d.id: d
        for d in session.exec(
            select(WebhookDelivery).where(
                col(WebhookDelivery.id).in_([w.delivery_id for w, _ in results])
            )
        ).all()
    }
    to_disable: dict[str, str] = {}
    for work, outcome in results:
        attempt = attempts.get(work.attempt_id)
        if attempt is not None:
            attempt.finished_at = now
            attempt.status_code = outcome.status_code
            attempt.duration_ms = outcome.duration_ms
            attempt.error = outcome.error
            session.add(attempt)
        delivery = deliveries.get(work.delivery_id)
        if delivery is None or delivery.status != PENDING:
            continue  # deleted or cancelled while the request was in flight
        delivery.locked_until = None
        delivery.updated_at = now
        if outcome.succeeded:
            delivery.status = SUCCEEDED
            delivery.completed_at = now
            delivery.next_attempt_at = None
            session.execute(
                sa.update(Webhook)
                .where(col(Webhook.id) == work.webhook_id)
                .values(consecutive_failures=0)
            )
            summary["succeeded"] += 1
        elif outcome.status_code == 410:
            delivery.status = FAILED
            delivery.failure_reason = "receiver answered 410 Gone"
            delivery.completed_at = now
            delivery.next_attempt_at = None
            to_disable[work.webhook_id] = "target answered 410 Gone"
            summary["failed"] += 1
        else:
            delay = next_delay(
                settings,
                delivery.attempt_count,
                status_code=outcome.status_code,
                retry_after=outcome.retry_after,
                now=now,
            )
            if delay is None:
                delivery.status = FAILED
                delivery.failure_reason = (
                    f"retries exhausted after {delivery.attempt_count} attempts"
                )
                delivery.completed_at = now
                delivery.next_attempt_at = None
                failures = session.execute(
                    sa.update(Webhook)
                    .where(col(Webhook.id) == work.webhook_id)
                    .values(consecutive_failures=Webhook.consecutive_failures + 1)
                    .returning(col(Webhook.consecutive_failures))
                ).scalar_one_or_none()
                limit = settings.webhook_disable_after_exhausted
                if failures is not None and failures >= limit:
                    to_disable[work.webhook_id] = (
                        f"{failures} consecutive events exhausted their retries"
                    )
                summary["failed"] += 1
            else:
                # The dispatcher enqueues the retry when it falls due.
                delivery.next_attempt_at = now + timedelta(seconds=delay)
                delivery.job_id = None
                delivery.enqueued_at = None
                summary["retrying"] += 1
        session.add(delivery)
    session.flush()
    for webhook_id, reason in to_disable.items():
        _disable(session, webhook_id, reason, now)
    return summary
