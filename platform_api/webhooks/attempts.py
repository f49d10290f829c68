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
from typing import Any, cast

import sqlalchemy as sa
import structlog
from sqlalchemy.engine import CursorResult
from sqlmodel import Session, col, select

from core.settings import Settings
from platform_api.crypto import decrypt_json
from platform_api.ids import new_id
from platform_api.tables.common import isoformat
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.webhook import (
    FAILED,
    PENDING,
    SUCCEEDED,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from platform_api.webhooks.retry import next_delay
from platform_api.webhooks.sender import Outcome
from platform_api.webhooks.signing import envelope_body

INACTIVE = "webhook inactive"
INTERRUPTED = "interrupted: the worker stopped during this attempt"

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Work:
    """Everything one attempt needs, read in the claim transaction."""

    delivery_id: str
    attempt_id: str
    attempt_number: int  # the delivery's attempt_count this claim set: the lease's identity
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
    return cast("CursorResult[Any]", result).rowcount or 0


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
        .execution_options(synchronize_session=False)
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
        .execution_options(synchronize_session=False)
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
        .execution_options(synchronize_session=False)
    )
    rows = session.exec(
        select(WebhookDelivery, Webhook, OutboxEvent)
        .join(Webhook, col(Webhook.id) == col(WebhookDelivery.webhook_id))
        .join(OutboxEvent, col(OutboxEvent.id) == col(WebhookDelivery.event_id))
        .where(col(WebhookDelivery.id).in_(numbers))
    ).all()
    secrets: dict[str, str] = {}
    work = []
    opened = []
    for delivery, webhook, event in rows:
        if webhook.id not in secrets:
            secrets[webhook.id] = decrypt_json(webhook.secret_encrypted, settings)
        attempt_id = new_id("wat")
        opened.append(
            {
                "id": attempt_id,
                "delivery_id": delivery.id,
                "number": numbers[delivery.id],
                "started_at": now,
            }
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
                numbers[delivery.id],
                webhook.id,
                event.id,
                webhook.target_url,
                secrets[webhook.id],
                body,
            )
        )
    if opened:
        session.execute(sa.insert(WebhookAttempt), opened)
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
    """Write each attempt's outcome and decide: succeeded, retry later, or failed.

    Bulk statements keep this one short transaction however large the batch."""
    summary = {"succeeded": 0, "retrying": 0, "failed": 0}
    # Locked until this transaction ends, so no claim can take a lease between this check
    # and the writes below.
    current: dict[str, int] = dict(
        session.execute(
            sa.select(col(WebhookDelivery.id), col(WebhookDelivery.attempt_count))
            .where(col(WebhookDelivery.id).in_([w.delivery_id for w, _ in results]))
            .where(col(WebhookDelivery.status) == PENDING)
            .with_for_update()
        ).all()
    )
    # An attempt row is closed once: by its job, or as interrupted by the job that claimed the
    # delivery after this one's lease ran out. A late result does not overwrite that.
    table = cast(sa.Table, sa.inspect(WebhookAttempt).local_table)  # Core: executemany + WHERE
    session.execute(
        sa.update(table)
        .where(table.c.id == sa.bindparam("attempt_id"))
        .where(table.c.finished_at.is_(None))
        .values(
            finished_at=sa.bindparam("finished"),
            status_code=sa.bindparam("code"),
            duration_ms=sa.bindparam("duration"),
            error=sa.bindparam("failure"),
        ),
        [
            {
                "attempt_id": work.attempt_id,
                "finished": now,
                "code": outcome.status_code,
                "duration": outcome.duration_ms,
                "failure": outcome.error,
            }
            for work, outcome in results
        ],
    )
    # The delivery is decided only under the lease this job took (its attempt number): once
    # another job claimed it, this late result changes nothing.
    held = [(w, o) for w, o in results if current.get(w.delivery_id) == w.attempt_number]
    late = [w.delivery_id for w, _ in results if current.get(w.delivery_id, w.attempt_number)
            != w.attempt_number]  # fmt: skip
    if late:
        log.warning("late_delivery_results_ignored", deliveries=late)
    results = held
    updates: list[dict] = []
    succeeded_webhooks: set[str] = set()
    exhausted_webhooks: list[str] = []
    to_disable: dict[str, str] = {}
    for work, outcome in results:
        attempts = current[work.delivery_id]
        row: dict = {"id": work.delivery_id, "locked_until": None, "updated_at": now}
        if outcome.succeeded:
            row.update(status=SUCCEEDED, completed_at=now, next_attempt_at=None)
            succeeded_webhooks.add(work.webhook_id)
            summary["succeeded"] += 1
        elif outcome.status_code == 410:
            row.update(
                status=FAILED,
                failure_reason="receiver answered 410 Gone",
                completed_at=now,
                next_attempt_at=None,
            )
            to_disable[work.webhook_id] = "target answered 410 Gone"
            summary["failed"] += 1
        else:
            delay = next_delay(
                settings,
                attempts,
                status_code=outcome.status_code,
                retry_after=outcome.retry_after,
                now=now,
            )
            if delay is None:
                row.update(
                    status=FAILED,
                    failure_reason=f"retries exhausted after {attempts} attempts",
                    completed_at=now,
                    next_attempt_at=None,
                )
                exhausted_webhooks.append(work.webhook_id)
                summary["failed"] += 1
            else:
                # The dispatcher enqueues the retry when it falls due.
                row.update(
                    next_attempt_at=now + timedelta(seconds=delay), job_id=None, enqueued_at=None
                )
                summary["retrying"] += 1
        updates.append(row)
    if updates:
        _update_each(session, updates)
    if succeeded_webhooks:
        session.execute(
            sa.update(Webhook)
            .where(col(Webhook.id).in_(succeeded_webhooks))
            .where(col(Webhook.consecutive_failures) != 0)
            .values(consecutive_failures=0)
            .execution_options(synchronize_session=False)
        )
    for webhook_id in exhausted_webhooks:
        failures = session.execute(
            sa.update(Webhook)
            .where(col(Webhook.id) == webhook_id)
            .values(consecutive_failures=Webhook.consecutive_failures + 1)
            .returning(col(Webhook.consecutive_failures))
            .execution_options(synchronize_session=False)
        ).scalar_one_or_none()
        if failures is not None and failures >= settings.webhook_disable_after_exhausted:
            to_disable[webhook_id] = f"{failures} consecutive events exhausted their retries"
    for webhook_id, reason in to_disable.items():
        _disable(session, webhook_id, reason, now)
    return summary


def _update_each(session: Session, rows: list[dict]) -> None:
    """Bulk UPDATE by primary key, grouped by the set of columns each row changes."""
    groups: dict[tuple[str, ...], list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(sorted(row)), []).append(row)
    for group in groups.values():
        session.execute(sa.update(WebhookDelivery), group)
