"""Column helpers shared by every table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field


def utcnow() -> datetime:
    return datetime.now(UTC)


def timestamp_field(**kwargs: Any) -> datetime:
    """A timezone-aware timestamp column that defaults to now."""
    return Field(default_factory=utcnow, sa_type=sa.DateTime(timezone=True), **kwargs)


def as_utc(value: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes; every timestamp the API shows is UTC."""
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def isoformat(value: datetime | None) -> str | None:
    value = as_utc(value)
    return value.isoformat().replace("+00:00", "Z") if value else None


@dataclass(frozen=True)
class HourWindow:
    """The last ``hours`` whole hours up to ``now``, the current one included."""

    now: datetime
    hours: int = 24

    @property
    def start(self) -> datetime:
        current = self.now.replace(minute=0, second=0, microsecond=0)
        return current - timedelta(hours=self.hours - 1)

    def index(self, moment: datetime | None) -> int | None:
        """The hour ``moment`` falls in (0 is the oldest), None without a moment. Rows are
        selected within the window and cut into hours here, the same on SQLite and
        PostgreSQL (the console's per-hour charts)."""
        moment = as_utc(moment)
        if moment is None:
            return None
        return int((moment - self.start).total_seconds() // 3600)

    def starts(self) -> list[datetime]:
        """Each hour's start, oldest first."""
        return [self.start + timedelta(hours=i) for i in range(self.hours)]
