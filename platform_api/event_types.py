"""The event catalog: every event type a webhook can subscribe to, in one place.

Features record events with ``platform_api.services.events.record_event``; a new event type
is added here so it is documented, listed at ``GET /v1/webhook/event-types`` and accepted in
subscriptions. It imports nothing of the platform: ``tables`` (the subscription schema),
``services`` and ``webhooks`` all read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

EVENT_TYPES: dict[str, str] = {
    "integrated_account:created": "An integrated account was connected.",
    "integrated_account:updated": "An integrated account's context, overrides or status changed.",
    "integrated_account:deleted": "An integrated account was deleted.",
    "integrated_account:authentication_error": (
        "The provider rejected an integrated account's credentials; it needs reauthorization."
    ),
    "sync_job_run:started": "A sync job run started.",
    "sync_job_run:record": "A sync job run fetched a record.",
    "sync_job_run:completed": "A sync job run completed.",
    "sync_job_run:failed": "A sync job run failed.",
    "webhook:test": "A test event sent by POST /v1/webhook/test (only to that webhook).",
}

TEST_EVENT = "webhook:test"


def entities() -> set[str]:
    return {name.split(":", 1)[0] for name in EVENT_TYPES}


def invalid_patterns(patterns: Iterable[str]) -> list[str]:
    """The subscriptions in ``patterns`` that name no known event type or ``entity:*``."""
    known_entities = entities()
    bad = []
    for pattern in patterns:
        if pattern in EVENT_TYPES:
            continue
        entity, _, rest = pattern.partition(":")
        if rest == "*" and entity in known_entities:
            continue
        bad.append(pattern)
    return bad


def valid_patterns() -> list[str]:
    """What a subscription may contain: each event type and each ``entity:*``."""
    return sorted(EVENT_TYPES) + sorted(f"{entity}:*" for entity in entities())


def matches(subscriptions: list[str] | None, event_type: str) -> bool:
    """Whether a webhook subscribed to ``subscriptions`` (None: everything) gets ``event_type``."""
    if subscriptions is None:
        return True
    entity = event_type.split(":", 1)[0]
    return any(s == event_type or s == f"{entity}:*" for s in subscriptions)


def subscription_schema(schema: dict[str, Any]) -> None:
    """JSON-schema hook: each item of an ``event_types`` array is one of ``valid_patterns()``."""
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "array":
            branch["items"] = {"type": "string", "enum": valid_patterns()}
