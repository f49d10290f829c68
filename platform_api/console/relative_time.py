"""Times on the console's pages: "3 min ago", "in 2 h", the exact UTC time in the title."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from markupsafe import Markup

from platform_api.console.pages import templates
from platform_api.tables.common import as_utc


def _moment(value: datetime | str | None) -> datetime | None:
    """A UTC datetime from a row's datetime or a service's ISO string (``...Z``)."""
    if isinstance(value, str):
        return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    return as_utc(value)


def relative(moment: datetime, now: datetime) -> str:
    """``moment`` as seen from ``now``: "just now", "3 min ago", "in 2 h", "5 d ago"."""
    seconds = int((moment - now).total_seconds())
    span = abs(seconds)
    if span < 45:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if span >= size:
            amount = f"{round(span / size)} {unit}"
            return f"in {amount}" if seconds > 0 else f"{amount} ago"
    return "just now"  # pragma: no cover - span >= 45 is at least a minute


def when(value: datetime | str | None, now: datetime) -> Markup:
    """A ``<time>`` element: the relative time, with the absolute UTC time as its title."""
    moment = _moment(value)
    if moment is None:
        return Markup("—")
    exact = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        moment.isoformat().replace("+00:00", "Z"), exact, relative(moment, as_utc(now) or now)
    )


def ago_for(now: datetime) -> Callable[[datetime | str | None], Markup]:
    """``when`` as a template function with ``now`` bound (``{{ ago(row.created_at) }}``)."""
    return lambda value: when(value, now)


templates.env.filters["when"] = when
