"""The returns cache: what sync runs saw of an account's ``wms/returns``, readable without a
provider call."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, select

from core.errors import invalid_request, not_found
from platform_api.pagination import PageParams, paginate
from platform_api.services import accounts
from platform_api.tables.common import as_utc, isoformat, utcnow
from platform_api.tables.sync import CachedReturn

MAX_PAGE = 200


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def upsert_returns(
    session: Session,
    *,
    environment_id: str,
    integrated_account_id: str,
    run_id: str,
    records: Iterable[dict],
) -> int:
    """Insert or replace each record (keyed by account and unified id); returns how many.

    Core statements, one delete and one insert per page: building ORM objects cost more than
    the rest of a page's work."""
    now = utcnow()
    rows = {
        str(record["id"]): {
            "integrated_account_id": integrated_account_id,
            "id": str(record["id"]),
            "environment_id": environment_id,
            "status": record.get("status"),
            "record": record,
            "record_updated_at": _parse_time(record.get("updated_at")),
            "cached_at": now,
            "run_id": run_id,
        }
        for record in records
    }
    if not rows:
        return 0
    session.execute(
        sa.delete(CachedReturn)
        .where(col(CachedReturn.integrated_account_id) == integrated_account_id)
        .where(col(CachedReturn.id).in_(list(rows)))
    )
    session.execute(sa.insert(CachedReturn), list(rows.values()))
    return len(rows)


def remove_missing(session: Session, *, integrated_account_id: str, seen: set[str]) -> int:
    """Delete the account's cached returns that a complete listing did not see."""
    ids = session.exec(
        select(CachedReturn.id).where(
            col(CachedReturn.integrated_account_id) == integrated_account_id
        )
    ).all()
    gone = [i for i in ids if i not in seen]
    for start in range(0, len(gone), 500):
        session.execute(
            sa.delete(CachedReturn)
            .where(col(CachedReturn.integrated_account_id) == integrated_account_id)
            .where(col(CachedReturn.id).in_(gone[start : start + 500]))
        )
    return len(gone)


def serialize(row: CachedReturn) -> dict[str, Any]:
    return {**row.record, "cached_at": isoformat(row.cached_at)}


def list_returns(
    session: Session,
    *,
    environment_id: str,
    integrated_account_id: str | None,
    params: PageParams,
    status: str | None,
    updated_after: str | None,
) -> dict[str, Any]:
    if not integrated_account_id:
        raise invalid_request("integrated_account_id: required")
    if params.limit > MAX_PAGE:
        raise invalid_request(f"limit: at most {MAX_PAGE}")
    accounts.get_account(
        session, environment_id=environment_id, integrated_account_id=integrated_account_id
    )
    statement = select(CachedReturn).where(
        col(CachedReturn.integrated_account_id) == integrated_account_id
    )
    if status is not None:
        statement = statement.where(col(CachedReturn.status) == status)
    if updated_after is not None:
        after = _parse_time(updated_after)
        if after is None:
            raise invalid_request("updated_after: an ISO 8601 timestamp, e.g. 2026-11-01T00:00:00Z")
        statement = statement.where(col(CachedReturn.record_updated_at) > after)
    scope = f"returns-cache:{environment_id}:{integrated_account_id}:{status}:{updated_after}"
    return paginate(
        session, statement, id_column=col(CachedReturn.id), params=params, scope=scope,
        serialize=serialize,
    )  # fmt: skip


def get_return(
    session: Session, *, environment_id: str, integrated_account_id: str | None, return_id: str
) -> dict[str, Any]:
    if not integrated_account_id:
        raise invalid_request("integrated_account_id: required")
    accounts.get_account(
        session, environment_id=environment_id, integrated_account_id=integrated_account_id
    )
    row = session.get(CachedReturn, (integrated_account_id, return_id))
    if row is None:
        raise not_found(f"cached return {return_id}")
    return serialize(row)
