"""Reading the API log."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from platform_api.pagination import PageParams, paginate
from platform_api.tables.api_log import ApiLogEntry
from platform_api.tables.common import as_utc, isoformat


def serialize_entry(entry: ApiLogEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "integrated_account_id": entry.integrated_account_id,
        "kind": entry.kind,
        "method": entry.method,
        "path": entry.path,
        "status": entry.status,
        "upstream_status": entry.upstream_status,
        "error": entry.error,
        "duration_ms": entry.duration_ms,
        "request_id": entry.request_id,
        "created_at": isoformat(entry.created_at),
    }


def list_api_log(
    session: Session,
    *,
    environment_id: str,
    integrated_account_id: str | None,
    params: PageParams,
    status_class: int | None = None,
) -> dict[str, Any]:
    """Entries of the environment (optionally one account), newest first; ``status_class``
    (2, 4 or 5: 2xx, 4xx, 5xx) keeps one class of statuses (the console uses it)."""
    statement = select(ApiLogEntry).where(ApiLogEntry.environment_id == environment_id)
    if integrated_account_id is not None:
        statement = statement.where(ApiLogEntry.integrated_account_id == integrated_account_id)
    if status_class is not None:
        low = status_class * 100
        statement = statement.where(
            col(ApiLogEntry.status) >= low, col(ApiLogEntry.status) < low + 100
        )
    # The status class is part of the scope: a cursor of one filter never pages another.
    scope = f"api-log:{environment_id}:account={integrated_account_id}"
    if status_class is not None:
        scope += f":status={status_class}xx"
    return paginate(
        session,
        statement,
        id_column=col(ApiLogEntry.id),
        params=params,
        scope=scope,
        serialize=serialize_entry,
        descending=True,
    )


def last_calls(
    session: Session, *, environment_id: str, account_ids: Collection[str]
) -> dict[str, datetime]:
    """The time of each account's newest logged call (one grouped query on the indexed
    account column; accounts never called are absent)."""
    if not account_ids:
        return {}
    statement = (
        select(ApiLogEntry.integrated_account_id, func.max(ApiLogEntry.created_at))
        .where(
            ApiLogEntry.environment_id == environment_id,
            col(ApiLogEntry.integrated_account_id).in_(list(account_ids)),
        )
        .group_by(col(ApiLogEntry.integrated_account_id))
    )
    return {
        account_id: moment
        for account_id, newest in session.exec(statement).all()
        if (moment := as_utc(newest)) is not None
    }
