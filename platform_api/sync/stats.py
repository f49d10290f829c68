"""Sync figures for the console: records synced per hour."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from platform_api.tables.common import as_utc
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

    One bounded query of (finished_at, resource_stats); hours are cut in Python, the same on
    SQLite and PostgreSQL."""
    current = now.replace(minute=0, second=0, microsecond=0)
    start = current - timedelta(hours=hours - 1)
    statement = (
        select(SyncJobRun.finished_at, SyncJobRun.resource_stats)
        .where(
            SyncJobRun.environment_id == environment_id,
            col(SyncJobRun.finished_at) >= start,
            col(SyncJobRun.finished_at) <= now,
        )
        .limit(limit)
    )
    counts = [0] * hours
    for finished_at, resource_stats in session.exec(statement).all():
        moment = as_utc(finished_at)
        if moment is not None:
            counts[int((moment - start).total_seconds() // 3600)] += _records(resource_stats)
    return [(start + timedelta(hours=i), count) for i, count in enumerate(counts)]
