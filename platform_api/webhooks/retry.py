"""When the next attempt happens: the configured schedule, jitter and Retry-After."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from core.settings import Settings

# Statuses whose Retry-After header is honoured.
RETRY_AFTER_STATUSES = (429, 503)


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds asked for by a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def next_delay(
    settings: Settings,
    attempts_made: int,
    *,
    status_code: int | None = None,
    retry_after: str | None = None,
    now: datetime,
) -> float | None:
    """Seconds until the next attempt after ``attempts_made`` attempts; None when exhausted."""
    schedule = settings.webhook_retry_schedule
    if attempts_made >= len(schedule):
        return None
    delay = schedule[attempts_made]
    jitter = settings.webhook_retry_jitter
    if delay > 0 and jitter > 0:
        # Spread retries so receivers coming back up are not hit by every sender at once.
        delay *= random.uniform(1 - jitter, 1 + jitter)
    if status_code in RETRY_AFTER_STATUSES:
        asked = parse_retry_after(retry_after, now)
        if asked is not None:
            delay = max(delay, min(asked, settings.webhook_max_retry_after_seconds))
    return delay
