"""Recording events into the outbox, in the caller's transaction."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from core.settings import Settings
from platform_api.ids import new_id
from platform_api.tables.outbox import OutboxEvent
from platform_api.webhooks.kick import kick_after_commit


def record_event(
    session: Session,
    *,
    environment_id: str,
    event_type: str,
    payload: dict[str, Any],
    settings: Settings,
    webhook_id: str | None = None,
) -> OutboxEvent:
    """Add an event to the outbox; it is delivered only if the caller's transaction commits,
    to every subscribed webhook of the environment, or only to ``webhook_id``. ``settings``
    name the Redis through which the dispatcher is woken after the commit."""
    event = OutboxEvent(
        id=new_id("evt"),
        environment_id=environment_id,
        event_type=event_type,
        payload=payload,
        target_webhook_id=webhook_id,
    )
    session.add(event)
    # Wakes the webhook dispatcher after the commit; without it the event waits for its poll.
    kick_after_commit(session, settings=settings)
    return event
