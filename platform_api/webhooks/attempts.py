"""A delivery job's two transactions: claim deliveries before sending, record what happened.

The claim takes a lease on each delivery (and writes the attempt row), so duplicate jobs for
the same delivery — the dispatcher re-enqueues deliveries whose job Redis lost — never send
twice at once; a lease that runs out means the worker died mid-attempt, and the dispatcher
hands the delivery to another job.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

import sqlalchemy as sa
import structlog
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import CursorResult
from sqlmodel import Session, col

from core.settings import Settings
from platform_api.crypto import decrypt_json
from platform_api.ids import new_id
from platform_api.tables.common import isoformat
from platform_api.tables.webhook import (
    FAILED,
    PENDING,
    SUCCEEDED,
    Webhook,
    WebhookDelivery,
)
from platform_api.webhooks.retry import next_delay
from platform_api.webhooks.sender import Outcome
from platform_api.webhooks.signing import envelope_body
from platform_api.webhooks.tables import (
    ATTEMPT,
    DELIVERY,
    OUTBOX,
    WEBHOOK,
    checked,
    delivery_transaction,
    in_list,
    insert_rows,
)

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


# Statements built once (see ``tables``); parameters are bound at each execution.
_NOW: sa.BindParameter[datetime] = sa.bindparam("now")
_NUMBER: sa.BindParameter[int] = sa.bindparam("number")  # the attempt a job holds
_ACTIVE = sa.select(WEBHOOK.c.id).where(WEBHOOK.c.is_active.is_(True))
_INACTIVE = sa.select(WEBHOOK.c.id).where(WEBHOOK.c.is_active.is_(False))
_CLAIM = (
    sa.update(DELIVERY)
    .where(in_list(DELIVERY.c.id))
    .where(
        checked(
            DELIVERY.c.status == PENDING,
            DELIVERY.c.next_attempt_at <= sa.bindparam("due_by"),
            sa.or_(DELIVERY.c.locked_until.is_(None), DELIVERY.c.locked_until < _NOW),
            DELIVERY.c.webhook_id.in_(_ACTIVE),
        )
    )
    .values(
        locked_until=sa.bindparam("lease"),
        attempt_count=DELIVERY.c.attempt_count + 1,
        updated_at=_NOW,
    )
    .returning(DELIVERY.c.id, DELIVERY.c.attempt_count, DELIVERY.c.event_id)
)
_FAIL_INACTIVE = (
    sa.update(DELIVERY)
    .where(in_list(DELIVERY.c.id))
    .where(checked(DELIVERY.c.status == PENDING, DELIVERY.c.webhook_id.in_(_INACTIVE)))
    .values(
        status=FAILED,
        failure_reason=INACTIVE,
        next_attempt_at=None,
        completed_at=_NOW,
    )
)
_CLOSE_INTERRUPTED = (
    sa.update(ATTEMPT)
    .where(in_list(ATTEMPT.c.delivery_id))
    .where(checked(ATTEMPT.c.finished_at.is_(None)))
    .values(finished_at=_NOW, error=INTERRUPTED)
)
_WORK = (
    sa.select(
        DELIVERY.c.id,
        WEBHOOK.c.id.label("webhook_id"),
        WEBHOOK.c.target_url,
        WEBHOOK.c.secret_encrypted,
        OUTBOX.c.id.label("event_id"),
        OUTBOX.c.event_type,
        OUTBOX.c.payload,
        OUTBOX.c.environment_id,
        OUTBOX.c.created_at,
    )
    .join(WEBHOOK, WEBHOOK.c.id == DELIVERY.c.webhook_id)
    .join(OUTBOX, OUTBOX.c.id == DELIVERY.c.event_id)
    .where(in_list(DELIVERY.c.id))
    # Implied by the join, stated so the events are read by primary key, not by scanning the
    # outbox (which the planner does while its statistics say the table is small).
    .where(in_list(OUTBOX.c.id, "event_ids"))
)


def claim(
    session: Session, delivery_ids: list[str], settings: Settings, now: datetime
) -> list[Work]:
    """Lease the due, pending, unleased deliveries among ``delivery_ids`` and open attempts;
    those of an inactive webhook fail instead."""
    connection = session.connection()
    delivery_transaction(connection)
    lease = now + timedelta(seconds=lease_seconds(settings, len(delivery_ids)))
    # A small slack: the dispatcher and the worker read the clock at slightly different times.
    due_by = now + timedelta(seconds=1)
    claimed = connection.execute(
        _CLAIM, {"ids": delivery_ids, "now": now, "due_by": due_by, "lease": lease}
    ).all()
    numbers: dict[str, int] = {row.id: row.attempt_count for row in claimed}
    if len(numbers) < len(delivery_ids):
        unclaimed = [i for i in delivery_ids if i not in numbers]
        connection.execute(_FAIL_INACTIVE, {"ids": unclaimed, "now": now})
    if not numbers:
        return []
    # An attempt still open under an expired lease was cut short by a dead worker; a first
    # attempt has none before it.
    retried = [delivery_id for delivery_id, number in numbers.items() if number > 1]
    if retried:
        connection.execute(_CLOSE_INTERRUPTED, {"ids": retried, "now": now})
    event_ids = sorted({row.event_id for row in claimed})
    rows = connection.execute(_WORK, {"ids": list(numbers), "event_ids": event_ids}).all()
    work = _work(rows, numbers, settings)
    insert_rows(connection, ATTEMPT, [_attempt_row(w, now) for w in work])
    return work


def _work(rows: Sequence[sa.Row], numbers: dict[str, int], settings: Settings) -> list[Work]:
    """What each claimed delivery sends: the event's envelope, signed with its webhook's
    secret (decrypted once per webhook)."""
    secrets: dict[str, str] = {}
    work = []
    for row in rows:
        if row.webhook_id not in secrets:
            secrets[row.webhook_id] = decrypt_json(row.secret_encrypted, settings)
        body = envelope_body(
            event_id=row.event_id,
            event_type=row.event_type,
            payload=row.payload,
            environment_id=row.environment_id,
            created_at=isoformat(row.created_at),
            webhook_id=row.webhook_id,
        )
        work.append(
            Work(
                delivery_id=row.id,
                attempt_id=new_id("wat"),
                attempt_number=numbers[row.id],
                webhook_id=row.webhook_id,
                event_id=row.event_id,
                url=row.target_url,
                secret=secrets[row.webhook_id],
                body=body,
            )
        )
    return work


def _attempt_row(work: Work, now: datetime) -> dict[str, Any]:
    return {
        "id": work.attempt_id,
        "delivery_id": work.delivery_id,
        "number": work.attempt_number,
        "started_at": now,
    }


def _disable(session: Session, webhook_id: str, reason: str, now: datetime) -> None:
    session.execute(
        sa.update(Webhook)
        .where(col(Webhook.id) == webhook_id)
        .values(is_active=False, disabled_reason=reason, updated_at=now)
    )
    cancel_pending(session, webhook_id=webhook_id, now=now, reason=INACTIVE)


_HELD = (
    sa.select(DELIVERY.c.id, DELIVERY.c.attempt_count)
    .where(in_list(DELIVERY.c.id))
    .where(checked(DELIVERY.c.status == PENDING))
    .with_for_update()
)
# An attempt row is closed once: by its job, or as interrupted by the job that claimed the
# delivery after this one's lease ran out. A late result does not overwrite that.
_CLOSE_ATTEMPT = (
    sa.update(ATTEMPT)
    .where(ATTEMPT.c.id == sa.bindparam("attempt_id"))
    .where(checked(ATTEMPT.c.finished_at.is_(None)))
    .values(
        finished_at=sa.bindparam("finished"),
        status_code=sa.bindparam("code"),
        duration_ms=sa.bindparam("duration"),
        error=sa.bindparam("failure"),
    )
)


def _array(name: str, column: sa.Column[Any]) -> sa.BindParameter[Any]:
    return sa.bindparam(name, type_=postgresql.ARRAY(column.type))


# The same on PostgreSQL in one statement, the job's outcomes bound as arrays (executemany
# sends a statement per attempt there, each parsed and planned on its own).
_OUTCOMES = (
    sa.func.unnest(
        _array("attempt_ids", ATTEMPT.c.id),
        _array("codes", ATTEMPT.c.status_code),
        _array("durations", ATTEMPT.c.duration_ms),
        _array("failures", ATTEMPT.c.error),
    )
    .table_valued(
        sa.column("id", ATTEMPT.c.id.type),
        sa.column("code", ATTEMPT.c.status_code.type),
        sa.column("duration", ATTEMPT.c.duration_ms.type),
        sa.column("failure", ATTEMPT.c.error.type),
    )
    .render_derived(name="outcome")
)
_CLOSE_ATTEMPTS = (
    sa.update(ATTEMPT)
    .where(ATTEMPT.c.id == _OUTCOMES.c.id)
    .where(checked(ATTEMPT.c.finished_at.is_(None)))
    .values(
        finished_at=_NOW,
        status_code=_OUTCOMES.c.code,
        duration_ms=_OUTCOMES.c.duration,
        error=_OUTCOMES.c.failure,
    )
)
# Only under the lease this job took: the delivery's attempt count is still this attempt's
# number. Checked and written in one statement, so no claim can come in between.
_SUCCEED = (
    sa.update(DELIVERY)
    .where(in_list(DELIVERY.c.id))
    .where(
        checked(DELIVERY.c.status == PENDING, DELIVERY.c.attempt_count == sa.bindparam("number"))
    )
    .values(
        status=SUCCEEDED,
        completed_at=_NOW,
        next_attempt_at=None,
        locked_until=None,
        updated_at=_NOW,
    )
    .returning(DELIVERY.c.id)
)
_FAIL = (
    sa.update(DELIVERY)
    .where(DELIVERY.c.id == sa.bindparam("delivery_id"))
    .values(
        status=FAILED,
        failure_reason=sa.bindparam("reason"),
        completed_at=_NOW,
        next_attempt_at=None,
        locked_until=None,
        updated_at=_NOW,
    )
)
# The dispatcher enqueues the retry when it falls due.
_RETRY = (
    sa.update(DELIVERY)
    .where(DELIVERY.c.id == sa.bindparam("delivery_id"))
    .values(
        next_attempt_at=sa.bindparam("retry_at"),
        job_id=None,
        enqueued_at=None,
        locked_until=None,
        updated_at=_NOW,
    )
)
_RESET_FAILURES = (
    sa.update(WEBHOOK)
    .where(in_list(WEBHOOK.c.id))
    .where(WEBHOOK.c.consecutive_failures != 0)
    .values(consecutive_failures=0)
)
_COUNT_FAILURE = (
    sa.update(WEBHOOK)
    .where(WEBHOOK.c.id == sa.bindparam("webhook_id"))
    .values(consecutive_failures=WEBHOOK.c.consecutive_failures + 1)
    .returning(WEBHOOK.c.consecutive_failures)
)


@dataclass
class Decisions:
    """What one job's results do to its deliveries and webhooks."""

    succeeded: list[str] = field(default_factory=list)  # delivery ids
    failed: list[dict[str, Any]] = field(default_factory=list)  # _FAIL parameters
    retrying: list[dict[str, Any]] = field(default_factory=list)  # _RETRY parameters
    succeeded_webhooks: set[str] = field(default_factory=set)
    exhausted_webhooks: list[str] = field(default_factory=list)
    to_disable: dict[str, str] = field(default_factory=dict)  # webhook id: reason

    def summary(self) -> dict[str, int]:
        return {
            "succeeded": len(self.succeeded),
            "retrying": len(self.retrying),
            "failed": len(self.failed),
        }


def decide_failures(
    failures: list[tuple[Work, Outcome]], settings: Settings, now: datetime, decisions: Decisions
) -> None:
    """Retry later (when) or fail (why), for each failed attempt of ``failures``; added to
    ``decisions``."""
    for work, outcome in failures:
        if outcome.status_code == 410:
            reason = "receiver answered 410 Gone"
            decisions.to_disable[work.webhook_id] = "target answered 410 Gone"
        else:
            made = work.attempt_number
            delay = next_delay(
                settings,
                made,
                status_code=outcome.status_code,
                retry_after=outcome.retry_after,
                now=now,
            )
            if delay is not None:
                retry_at = now + timedelta(seconds=delay)
                decisions.retrying.append({"delivery_id": work.delivery_id, "retry_at": retry_at})
                continue
            reason = f"retries exhausted after {made} attempts"
            decisions.exhausted_webhooks.append(work.webhook_id)
        decisions.failed.append({"delivery_id": work.delivery_id, "reason": reason})


def record(
    session: Session, results: list[tuple[Work, Outcome]], settings: Settings, now: datetime
) -> dict[str, int]:
    """Write each attempt's outcome and decide: succeeded, retry later, or failed.

    A few bulk statements keep this one short transaction however large the batch. A delivery
    is decided only under the lease this job took (its attempt number): once another job
    claimed it, or it stopped being pending, this late result changes nothing."""
    connection = session.connection()
    delivery_transaction(connection)
    _close_attempts(connection, results, now)
    decisions = Decisions()
    for work in _succeed(connection, [w for w, o in results if o.succeeded], now):
        decisions.succeeded.append(work.delivery_id)
        decisions.succeeded_webhooks.add(work.webhook_id)
    failures = _held_failures(connection, [(w, o) for w, o in results if not o.succeeded])
    decide_failures(failures, settings, now, decisions)
    decided = {*decisions.succeeded, *(w.delivery_id for w, _ in failures)}
    late = [w.delivery_id for w, _ in results if w.delivery_id not in decided]
    if late:
        log.warning("late_delivery_results_ignored", deliveries=late)
    _write_failures(connection, decisions, now)
    _write_webhooks(session, decisions, settings, now)
    return decisions.summary()


def _succeed(connection: sa.Connection, successes: list[Work], now: datetime) -> list[Work]:
    """Mark succeeded the deliveries of ``successes`` this job still holds; returns those."""
    by_number: dict[int, list[str]] = defaultdict(list)
    for work in successes:
        by_number[work.attempt_number].append(work.delivery_id)
    delivered: set[str] = set()
    for number, ids in by_number.items():  # mostly one: the first attempt
        params = {"ids": ids, "number": number, "now": now}
        delivered.update(connection.execute(_SUCCEED, params).scalars())
    return [work for work in successes if work.delivery_id in delivered]


def _held_failures(
    connection: sa.Connection, failures: list[tuple[Work, Outcome]]
) -> list[tuple[Work, Outcome]]:
    """The failures whose delivery this job still holds, locked until the transaction ends so
    no claim can take a lease between this check and the writes that follow."""
    if not failures:
        return []
    ids = [work.delivery_id for work, _ in failures]
    current = dict(connection.execute(_HELD, {"ids": ids}).tuples().all())
    return [(w, o) for w, o in failures if current.get(w.delivery_id) == w.attempt_number]


def _close_attempts(
    connection: sa.Connection, results: list[tuple[Work, Outcome]], now: datetime
) -> None:
    if connection.dialect.name == "postgresql":
        outcomes = [o for _, o in results]
        connection.execute(
            _CLOSE_ATTEMPTS,
            {
                "attempt_ids": [w.attempt_id for w, _ in results],
                "codes": [o.status_code for o in outcomes],
                "durations": [o.duration_ms for o in outcomes],
                "failures": [o.error for o in outcomes],
                "now": now,
            },
        )
        return
    rows = [
        {"attempt_id": work.attempt_id, "finished": now, "code": outcome.status_code,
         "duration": outcome.duration_ms, "failure": outcome.error}
        for work, outcome in results
    ]  # fmt: skip
    connection.execute(_CLOSE_ATTEMPT, rows)


def _write_failures(connection: sa.Connection, decisions: Decisions, now: datetime) -> None:
    if decisions.failed:
        connection.execute(_FAIL, [{**row, "now": now} for row in decisions.failed])
    if decisions.retrying:
        connection.execute(_RETRY, [{**row, "now": now} for row in decisions.retrying])


def _write_webhooks(
    session: Session, decisions: Decisions, settings: Settings, now: datetime
) -> None:
    """Any success resets a webhook's count of exhausted events; enough in a row, or a 410,
    set it inactive."""
    connection = session.connection()
    if decisions.succeeded_webhooks:
        connection.execute(_RESET_FAILURES, {"ids": sorted(decisions.succeeded_webhooks)})
    to_disable = dict(decisions.to_disable)
    for webhook_id in decisions.exhausted_webhooks:
        failures = connection.execute(_COUNT_FAILURE, {"webhook_id": webhook_id}).scalar()
        if failures is not None and failures >= settings.webhook_disable_after_exhausted:
            to_disable[webhook_id] = f"{failures} consecutive events exhausted their retries"
    for webhook_id, reason in to_disable.items():
        _disable(session, webhook_id, reason, now)
