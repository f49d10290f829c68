"""The returns cache: what sync runs saw of an account's ``wms/returns``, readable without a
provider call."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlmodel import Session, col, select

from core.errors import invalid_request, not_found
from platform_api.pagination import PageParams, paginate
from platform_api.services import accounts
from platform_api.services.events import json_text
from platform_api.tables.common import as_utc, isoformat, utcnow
from platform_api.tables.sync import CachedReturn

MAX_PAGE = 200


def _parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time as UTC (no zone: UTC); None when ``value`` is not one. In UTC, not in
    the offset it was written with: SQLite keeps the wall time and drops the offset."""
    if not isinstance(value, str):
        return None
    try:
        parsed = as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed is not None else None


def upsert_returns(
    session: Session,
    *,
    environment_id: str,
    integrated_account_id: str,
    run_id: str,
    records: Iterable[dict],
) -> int:
    """Insert or replace each record (keyed by account and unified id); returns how many.

    One ``INSERT … ON CONFLICT DO UPDATE`` for the page, its rows passed as one JSON document
    (written by pydantic-core): the ORM's bulk insert, a delete before it, a parameter per
    column and row and the standard JSON encoder cost more than the rest of a page's database
    work."""
    dialect = session.get_bind().dialect
    page, count = document(records, dialect)
    if not count:
        return 0
    session.execute(
        _upsert_statement(dialect.name),
        {"page": page, "integrated_account_id": integrated_account_id,
         "environment_id": environment_id, "cached_at": utcnow(), "run_id": run_id},
    )  # fmt: skip
    return count


def document(records: Iterable[dict], dialect: Dialect) -> tuple[str, int]:
    """The page's rows as the upsert's one JSON parameter, and how many: each record by
    its id (a record listed twice keeps its last version: one statement may not update a row
    twice), with its status and update time as the cache's columns store them."""
    page = {str(record["id"]): record for record in records}
    stored_time = _stored_time(dialect)
    return json_text([
        {"id": key, "status": record.get("status"), "record": record,
         "updated_at": stored_time(_parse_time(record.get("updated_at")))}
        for key, record in page.items()
    ]), len(page)  # fmt: skip


_REPLACED = ("environment_id", "status", "record", "record_updated_at", "cached_at", "run_id")
# How each database reads the document's entries: the rows, then an entry's id, status,
# record (JSON text, on PostgreSQL as written) and update time. ``json_to_recordset`` parses
# each entry once (``->>`` per field would parse it again for each: a quarter more of the
# statement's time).
_DOCUMENT_READERS = {
    "postgresql": (
        "json_to_recordset(CAST(:page AS JSON))"
        " AS r(id text, status text, record json, updated_at timestamptz)",
        "r.id", "r.status", "r.record", "r.updated_at",
    ),
    "sqlite": (
        "json_each(:page) AS r",
        "json_extract(r.value, '$.id')", "json_extract(r.value, '$.status')",
        "json_extract(r.value, '$.record')", "json_extract(r.value, '$.updated_at')",
    ),
}  # fmt: skip


def upsert_sql(dialect: str, *, where: str = "true") -> str:
    """The page's upsert, with one parameter for its rows whatever their number (``:page``,
    see ``document``): a multi-row VALUES list has 800, and the PostgreSQL driver parses a
    statement that long again on every execution (it is past its cache). ``where`` guards
    the insert (``true`` also tells SQLite's parser that ON CONFLICT is not a join's ON)."""
    rows, key, status, record, updated_at = _DOCUMENT_READERS[dialect]
    return f"""
        INSERT INTO cached_return (integrated_account_id, id, environment_id, status, record,
                                   record_updated_at, cached_at, run_id)
        SELECT :integrated_account_id, {key}, :environment_id, {status}, {record},
               {updated_at}, :cached_at, :run_id
        FROM {rows} WHERE {where}
        ON CONFLICT (integrated_account_id, id) DO UPDATE SET
        {", ".join(f"{name} = excluded.{name}" for name in _REPLACED)}
        """


@lru_cache(maxsize=4)
def _upsert_statement(dialect: str) -> sa.TextClause:
    return sa.text(upsert_sql(dialect)).bindparams(
        sa.bindparam("cached_at", type_=sa.DateTime(timezone=True))
    )


@lru_cache(maxsize=4)
def _stored_time(dialect: Dialect) -> Callable[[datetime | None], Any]:
    """A time as the document carries it: as the column would store it (SQLite keeps text in
    SQLAlchemy's format), or ISO 8601 for PostgreSQL to read."""
    column_type = CachedReturn.__table__.c.record_updated_at.type  # type: ignore[attr-defined]
    processor = column_type.dialect_impl(dialect).bind_processor(dialect)
    if processor is None:
        return lambda value: value.isoformat() if value is not None else None
    return processor


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
