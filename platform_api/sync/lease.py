"""A worker's lease on a sync run: claiming it, fenced writes, and a page's fenced write.

Claiming a run raises its ``lease_token``; every later write of the worker first updates the
run row only if the token is still the one it claimed with (a fenced write), in the same
transaction as the rest of the write. The reaper and ``stop_run`` raise the token, so a run
taken from its worker refuses the rest of that worker's writes: they write nothing.

A page's write (the fence, the page's cache rows, its ``sync_job_run:record`` event) is the
hot path of a run. On PostgreSQL it is one statement (data-modifying CTEs, each insert
guarded by the fence's result) on a connection the run holds in autocommit mode: one round
trip, no BEGIN, no COMMIT of its own, no pool checkout or ping per page. SQLite runs the same
writes as three statements in a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, cast

import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, col

from core.settings import Settings
from platform_api.db import get_engine, session_scope
from platform_api.ids import new_id
from platform_api.services.events import json_text, record_event
from platform_api.sync import cache
from platform_api.tables.common import utcnow
from platform_api.tables.sync import SyncJobRun
from platform_api.webhooks import kick as dispatcher

log = structlog.get_logger(__name__)

# The states of a run a worker holds; a fenced write matches no other.
LEASED_STATES = ("running", "rate_limited")
PAGE_EVENT = "sync_job_run:record"


class LeaseLost(Exception):
    """The run is no longer this worker's: the reaper failed it, it was stopped, or its
    account was deleted."""


def claim_run(session: Session, run_id: str, now: datetime) -> int | None:
    """Move a queued run to ``running`` under a new lease; returns its token, or None when the
    run is not queued (another worker has it, or it has ended)."""
    claimed = session.execute(
        sa.update(SyncJobRun)
        .where(col(SyncJobRun.id) == run_id, col(SyncJobRun.status) == "queued")
        .values(
            status="running",
            lease_token=col(SyncJobRun.lease_token) + 1,
            started_at=now,
            heartbeat_at=now,
        )
        .returning(col(SyncJobRun.lease_token))
        .execution_options(synchronize_session=False)
    ).first()
    return None if claimed is None else int(claimed[0])


def fence(session: Session, *, run_id: str, token: int, **values: Any) -> None:
    """Update the run row with ``values`` only if ``token`` still holds its lease; LeaseLost
    otherwise. The first statement of every write of a worker: the row stays locked until the
    transaction ends, and a refused fence rolls back whatever the transaction would have
    written."""
    result = session.execute(
        sa.update(SyncJobRun)
        .where(
            col(SyncJobRun.id) == run_id,
            col(SyncJobRun.lease_token) == token,
            col(SyncJobRun.status).in_(LEASED_STATES),
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if cast("CursorResult[Any]", result).rowcount != 1:
        raise LeaseLost(run_id)


@dataclass(frozen=True)
class Page:
    """One fetched page as its fenced write takes it."""

    run_id: str
    token: int
    heartbeat_at: datetime
    resource_stats: dict[str, dict[str, int]]
    environment_id: str
    integrated_account_id: str
    webhook_id: str | None
    # The returns cache takes the page's records (a complete ``wms/returns`` listing or not).
    cached: bool
    records: list[Any]
    payload: dict[str, Any]  # the page event's


@lru_cache(maxsize=2)
def _page_statement(cached: bool) -> sa.TextClause:
    """PostgreSQL: the fence, the cache upsert and the page's event in one statement. Both
    inserts read the fence's RETURNING (so it runs first) and write nothing when it matched
    no row; the statement returns how many rows the fence matched. The event's id is chosen
    by the caller, so a write repeated after a lost connection (it may have committed) adds
    no second event."""
    states = ", ".join(f"'{state}'" for state in LEASED_STATES)
    upsert = cache.upsert_sql("postgresql", where="EXISTS (SELECT 1 FROM fence)")
    return sa.text(
        f"""
        WITH fence AS (
            UPDATE sync_job_run
            SET heartbeat_at = :heartbeat_at, resource_stats = CAST(:resource_stats AS JSON)
            WHERE id = :run_id AND lease_token = :token AND status IN ({states})
            RETURNING id
        ),{f" cached AS ({upsert})," if cached else ""}
        event AS (
            INSERT INTO outbox_event (id, environment_id, event_type, payload, created_at,
                                      dispatched_at, target_webhook_id)
            SELECT :event_id, :environment_id, '{PAGE_EVENT}', CAST(:payload AS JSON),
                   :created_at, NULL, CAST(:webhook_id AS VARCHAR)
            WHERE EXISTS (SELECT 1 FROM fence)
            ON CONFLICT (id) DO NOTHING
        )
        SELECT count(*) FROM fence
        """
    ).bindparams(
        *(sa.bindparam(name, type_=sa.DateTime(timezone=True))
          for name in ("heartbeat_at", "created_at", *(["cached_at"] if cached else [])))
    )  # fmt: skip


class PageWriter:
    """Writes a run's pages, in order, each in its own transaction; LeaseLost, and nothing
    written, once the lease is gone. Used by one thread at a time; ``close`` when the run
    ends."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._connection: Connection | None = None

    def write(self, page: Page) -> None:
        if get_engine(self.settings).dialect.name == "postgresql":
            self._write_in_one_statement(page)
            # The commit is the statement's; wake the dispatcher for the event now.
            dispatcher.kick(self.settings)
        else:
            self._write_in_session(page)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _write_in_session(self, page: Page) -> None:
        with session_scope(self.settings) as session:
            fence(session, run_id=page.run_id, token=page.token,
                  heartbeat_at=page.heartbeat_at, resource_stats=page.resource_stats)  # fmt: skip
            if page.cached:
                cache.upsert_returns(
                    session, environment_id=page.environment_id,
                    integrated_account_id=page.integrated_account_id, run_id=page.run_id,
                    records=page.records,
                )  # fmt: skip
            record_event(
                session, environment_id=page.environment_id, event_type=PAGE_EVENT,
                payload=page.payload, settings=self.settings, webhook_id=page.webhook_id,
            )  # fmt: skip

    def _write_in_one_statement(self, page: Page) -> None:
        params: dict[str, Any] = {
            "run_id": page.run_id,
            "token": page.token,
            "heartbeat_at": page.heartbeat_at,
            "resource_stats": json_text(page.resource_stats),
            "event_id": new_id("evt"),
            "environment_id": page.environment_id,
            "payload": json_text(page.payload),
            "created_at": utcnow(),
            "webhook_id": page.webhook_id,
        }
        if page.cached:
            params["page"], _ = cache.document(page.records, get_engine(self.settings).dialect)
            params["integrated_account_id"] = page.integrated_account_id
            params["cached_at"] = params["created_at"]
        statement = _page_statement(page.cached)
        try:
            matched = self._held().execute(statement, params).scalar_one()
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            # The connection dropped (a database restart, an idle timeout): once more on a
            # new one. Repeating is safe: the fence and the upsert set the same values, and
            # the event keeps its id.
            log.info("sync_page_write_reconnect", run_id=page.run_id, error=str(exc.orig))
            self.close()
            matched = self._held().execute(statement, params).scalar_one()
        if matched != 1:
            raise LeaseLost(page.run_id)

    def _held(self) -> Connection:
        """The run's connection, checked out (and pinged) once, in autocommit mode: each
        statement is its own transaction."""
        if self._connection is None or self._connection.invalidated:
            self.close()
            self._connection = (
                get_engine(self.settings).connect().execution_options(isolation_level="AUTOCOMMIT")
            )
        return self._connection
