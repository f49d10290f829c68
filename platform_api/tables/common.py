"""Column helpers shared by every table."""

from __future__ import annotations

from datetime import UTC, datetime
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
