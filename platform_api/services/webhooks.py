"""Webhook subscriptions, test events, the delivery log and replays."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, select

from core.errors import ApiError, invalid_request, not_found
from core.settings import Settings
from platform_api.crypto import encrypt_json
from platform_api.event_types import TEST_EVENT, invalid_patterns, valid_patterns
from platform_api.ids import new_id
from platform_api.pagination import PageParams, paginate
from platform_api.tables.common import HourWindow, isoformat, utcnow
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.webhook import (
    DELIVERY_STATES,
    PENDING,
    AttemptPublic,
    DeliveryPublic,
    Webhook,
    WebhookAttempt,
    WebhookCreate,
    WebhookDelivery,
    WebhookPublic,
    WebhookUpdate,
)
from platform_api.webhooks.attempts import INACTIVE, cancel_pending
from platform_api.webhooks.kick import kick_after_commit
from platform_api.webhooks.signing import new_secret
from platform_api.webhooks.targets import validate_target_url


def webhook_public(webhook: Webhook) -> WebhookPublic:
    return WebhookPublic(
        id=webhook.id,
        target_url=webhook.target_url,
        is_active=webhook.is_active,
        event_types=webhook.event_types,
        environment_id=webhook.environment_id,
        disabled_reason=webhook.disabled_reason,
        created_at=isoformat(webhook.created_at) or "",
        updated_at=isoformat(webhook.updated_at) or "",
    )


def _event_types(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    bad = invalid_patterns(value)
    if bad:
        raise invalid_request(
            f"event_types: unknown event type(s) {', '.join(bad)}; "
            f"valid: {', '.join(valid_patterns())}"
        )
    return list(dict.fromkeys(value))


def create_webhook(
    session: Session, *, environment_id: str, data: WebhookCreate, settings: Settings
) -> tuple[Webhook, str]:
    """Create a webhook; returns it with its signing secret (stored encrypted, shown once)."""
    url = validate_target_url(
        data.target_url, settings.webhook_allowed_hosts, settings.egress_allow_only
    )
    secret = new_secret()
    now = utcnow()
    webhook = Webhook(
        id=new_id("whk"),
        environment_id=environment_id,
        target_url=url,
        secret_encrypted=encrypt_json(secret, settings),
        is_active=data.is_active,
        event_types=_event_types(data.event_types),
        active_since=now,
        created_at=now,
        updated_at=now,
    )
    session.add(webhook)
    session.flush()
    return webhook, secret


def list_webhooks(session: Session, *, environment_id: str, params: PageParams) -> dict[str, Any]:
    statement = select(Webhook).where(col(Webhook.environment_id) == environment_id)
    return paginate(
        session,
        statement,
        id_column=col(Webhook.id),
        params=params,
        scope=f"webhook:{environment_id}",
        serialize=lambda w: webhook_public(w).model_dump(),
    )


def get_webhook(session: Session, *, environment_id: str, webhook_id: str) -> Webhook:
    webhook = session.get(Webhook, webhook_id)
    if webhook is None or webhook.environment_id != environment_id:
        raise not_found(f"webhook {webhook_id}")
    return webhook


def update_webhook(
    session: Session,
    *,
    environment_id: str,
    webhook_id: str,
    data: WebhookUpdate,
    settings: Settings,
) -> Webhook:
    """Apply the fields present in ``data``; deactivating cancels pending deliveries."""
    webhook = get_webhook(session, environment_id=environment_id, webhook_id=webhook_id)
    fields = data.model_fields_set
    now = utcnow()
    if "target_url" in fields:
        if data.target_url is None:
            raise invalid_request("target_url: must not be null")
        webhook.target_url = validate_target_url(
            data.target_url, settings.webhook_allowed_hosts, settings.egress_allow_only
        )
    if "event_types" in fields:
        webhook.event_types = _event_types(data.event_types)
    if "is_active" in fields:
        if data.is_active is None:
            raise invalid_request("is_active: must be true or false")
        if data.is_active and not webhook.is_active:
            # Only events from now on: reactivating never resends what was missed.
            webhook.active_since = now
            webhook.consecutive_failures = 0
            webhook.disabled_reason = None
        elif not data.is_active and webhook.is_active:
            cancel_pending(session, webhook_id=webhook.id, now=now, reason=INACTIVE)
        webhook.is_active = data.is_active
    webhook.updated_at = now
    session.add(webhook)
    session.flush()
    return webhook


def delete_webhook(session: Session, *, environment_id: str, webhook_id: str) -> None:
    """Delete a webhook with its delivery log; queued jobs find nothing left to send."""
    webhook = get_webhook(session, environment_id=environment_id, webhook_id=webhook_id)
    deliveries = select(WebhookDelivery.id).where(col(WebhookDelivery.webhook_id) == webhook.id)
    session.execute(
        sa.delete(WebhookAttempt).where(col(WebhookAttempt.delivery_id).in_(deliveries))
    )
    session.execute(sa.delete(WebhookDelivery).where(col(WebhookDelivery.webhook_id) == webhook.id))
    session.delete(webhook)
    session.flush()


def _require_active(webhook: Webhook) -> None:
    if not webhook.is_active:
        raise ApiError(409, "CONFLICT", f"webhook {webhook.id} is inactive; activate it first")


def _new_delivery(
    webhook: Webhook, event: OutboxEvent, replay_of: str | None = None
) -> WebhookDelivery:
    now = utcnow()
    return WebhookDelivery(
        id=new_id("wdl"),
        webhook_id=webhook.id,
        environment_id=webhook.environment_id,
        event_id=event.id,
        event_type=event.event_type,
        next_attempt_at=now,
        replay_of=replay_of,
        created_at=now,
        updated_at=now,
    )


def send_test(
    session: Session, *, environment_id: str, webhook_id: str, settings: Settings
) -> WebhookDelivery:
    """Queue a ``webhook:test`` event for this webhook only, subscribed to it or not."""
    webhook = get_webhook(session, environment_id=environment_id, webhook_id=webhook_id)
    _require_active(webhook)
    now = utcnow()
    payload = {
        "message": "A test event: your endpoint receives and verifies Switchyard webhooks.",
        "webhook": webhook_public(webhook).model_dump(),
    }
    # Written to the outbox already dispatched: it goes to this webhook, not to every one.
    event = OutboxEvent(
        id=new_id("evt"),
        environment_id=environment_id,
        event_type=TEST_EVENT,
        payload=payload,
        created_at=now,
        dispatched_at=now,
    )
    session.add(event)
    session.flush()
    delivery = _new_delivery(webhook, event)
    session.add(delivery)
    session.flush()
    kick_after_commit(session, settings=settings)
    return delivery


def replay_delivery(
    session: Session,
    *,
    environment_id: str,
    webhook_id: str,
    delivery_id: str,
    settings: Settings,
) -> WebhookDelivery:
    """Send a delivery's event again (same ``webhook-id``), as a new delivery in the log."""
    webhook = get_webhook(session, environment_id=environment_id, webhook_id=webhook_id)
    original = session.get(WebhookDelivery, delivery_id)
    if original is None or original.webhook_id != webhook.id:
        raise not_found(f"delivery {delivery_id}")
    _require_active(webhook)
    event = session.get(OutboxEvent, original.event_id)
    if event is None:  # pragma: no cover - the foreign key keeps the event
        raise not_found(f"event {original.event_id}")
    delivery = _new_delivery(webhook, event, replay_of=original.id)
    session.add(delivery)
    session.flush()
    kick_after_commit(session, settings=settings)
    return delivery


def _delivery_public(delivery: WebhookDelivery, attempts: list[WebhookAttempt]) -> DeliveryPublic:
    return DeliveryPublic(
        id=delivery.id,
        webhook_id=delivery.webhook_id,
        event_id=delivery.event_id,
        event_type=delivery.event_type,
        status=delivery.status,
        attempt_count=delivery.attempt_count,
        attempts=[
            AttemptPublic(
                attempted_at=isoformat(a.started_at) or "",
                status_code=a.status_code,
                duration_ms=a.duration_ms,
                error=a.error if a.finished_at is not None else "in progress",
            )
            for a in sorted(attempts, key=lambda a: a.number)
        ],
        next_attempt_at=isoformat(delivery.next_attempt_at) if delivery.status == PENDING else None,
        failure_reason=delivery.failure_reason,
        replay_of=delivery.replay_of,
        created_at=isoformat(delivery.created_at) or "",
        completed_at=isoformat(delivery.completed_at),
    )


def list_deliveries(
    session: Session,
    *,
    environment_id: str,
    webhook_id: str,
    status: str | None,
    params: PageParams,
) -> dict[str, Any]:
    """The webhook's delivery log, newest first, each with its attempts."""
    webhook = get_webhook(session, environment_id=environment_id, webhook_id=webhook_id)
    statement = select(WebhookDelivery).where(col(WebhookDelivery.webhook_id) == webhook.id)
    if status is not None:
        if status not in DELIVERY_STATES:
            raise invalid_request(f"status: must be one of {', '.join(DELIVERY_STATES)}")
        statement = statement.where(col(WebhookDelivery.status) == status)
    page = paginate(
        session,
        statement,
        id_column=col(WebhookDelivery.id),
        params=params,
        scope=f"webhook-deliveries:{webhook.id}:{status or ''}",
        descending=True,
    )
    deliveries: list[WebhookDelivery] = page["result"]
    attempts: dict[str, list[WebhookAttempt]] = defaultdict(list)
    if deliveries:
        for attempt in session.exec(
            select(WebhookAttempt).where(
                col(WebhookAttempt.delivery_id).in_([d.id for d in deliveries])
            )
        ).all():
            attempts[attempt.delivery_id].append(attempt)
    page["result"] = [_delivery_public(d, attempts[d.id]).model_dump() for d in deliveries]
    return page


def deliveries_per_hour(
    session: Session,
    *,
    environment_id: str,
    now: datetime,
    hours: int = 24,
    limit: int = 20_000,
) -> list[tuple[datetime, dict[str, int]]]:
    """The environment's deliveries made in the last ``hours`` whole hours (the current one
    included), counted by status per hour, oldest hour first (the console's chart).

    One bounded query of (created_at, status), cut into hours by ``HourWindow``."""
    window = HourWindow(now, hours)
    statement = (
        select(WebhookDelivery.created_at, WebhookDelivery.status)
        .where(
            WebhookDelivery.environment_id == environment_id,
            col(WebhookDelivery.created_at) >= window.start,
            col(WebhookDelivery.created_at) <= now,
        )
        .limit(limit)
    )
    counts: list[dict[str, int]] = [defaultdict(int) for _ in range(hours)]
    for created_at, status in session.exec(statement).all():
        if (hour := window.index(created_at)) is not None:
            counts[hour][status] += 1
    return [(start, dict(bucket)) for start, bucket in zip(window.starts(), counts, strict=True)]
