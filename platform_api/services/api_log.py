"""Reading the API log."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from platform_api.pagination import PageParams, paginate
from platform_api.tables.api_log import ApiLogEntry
from platform_api.tables.common import isoformat


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
) -> dict[str, Any]:
    """Entries of the environment (optionally one account), newest first."""
    statement = select(ApiLogEntry).where(ApiLogEntry.environment_id == environment_id)
    if integrated_account_id is not None:
        statement = statement.where(ApiLogEntry.integrated_account_id == integrated_account_id)
    return paginate(
        session,
        statement,
        id_column=col(ApiLogEntry.id),
        params=params,
        scope=f"api-log:{environment_id}:account={integrated_account_id}",
        serialize=serialize_entry,
        descending=True,
    )
