"""Sync figures for the console: records synced per hour."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from platform_api.tables.common import HourWindow
from platform_api.tables.sync import SyncJobRun


def _records(resource_stats: Mapping[str, Any] | None) -> int:
    return sum(int(s.get("records") or 0) for s in (resource_stats or {}).values())


def records_per_hour(
    session: Session,
    *,
    environment_id: str,
    now: datetime,
    hours: int = 24,
    limit: int = 5_000,
) -> list[tuple[datetime, int]]:
    """Records synced by the environment's runs that ended in the last ``hours`` whole hours
    (the current one included), per hour of their end, oldest hour first (the console's
    chart). A run counts every record it read (its ``resource_stats``), whether it
    completed, failed or was stopped; a run still under way counts once it ends.

    One bounded query of (finished_at, resource_stats), cut into hours by ``HourWindow``."""
    window = HourWindow(now, hours)
    statement = (
        select(SyncJobRun.finished_at, SyncJobRun.resource_stats)
        .where(
            SyncJobRun.environment_id == environment_id,
            col(SyncJobRun.finished_at) >= window.start,
            col(SyncJobRun.finished_at) <= now,
        )
        .limit(limit)
    )
    counts = [0] * hours
    for finished_at, resource_stats in session.exec(statement).all():
        if (hour := window.index(finished_at)) is not None:
            counts[hour] += _records(resource_stats)
    return list(zip(window.starts(), counts, strict=True))
