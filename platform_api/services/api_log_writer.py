"""API-log rows written off the request path: queued, then committed in batches by one thread.

A unified or proxy call hands its row (a plain mapping of column values: building an ORM
object costs more than the rest of the log write) to ``ApiLogWriter.add`` and answers; the
writer commits
what has queued every ``api_log_flush_interval_s`` (or at once when a batch is full). Nothing
is dropped: a full queue makes the caller write its own row, a batch that fails is retried
row by row (a row whose account was deleted meanwhile goes with the account, as the deletion
promises), and ``flush`` writes everything queued before the API log is read, an account is
deleted or the process stops.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import deque
from typing import Any

import sqlalchemy as sa
import structlog
from sqlmodel import Session

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.tables.api_log import ApiLogEntry
from platform_api.tables.integrated_account import IntegratedAccount

log = structlog.get_logger(__name__)

BATCH_ROWS = 500
ApiLogRow = dict[str, Any]  # the api_log table's columns, created_at included
API_LOG_TABLE: sa.Table = ApiLogEntry.__table__  # type: ignore[attr-defined]


class ApiLogWriter:
    """One per database per process (``writer_for``)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._interval_s = settings.api_log_flush_interval_s
        self._max_queued = settings.api_log_queue_max
        self._queued: deque[ApiLogRow] = deque()
        self._wake = threading.Condition()
        self._write_lock = threading.Lock()  # one batch at a time, in order
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="api-log-writer", daemon=True)
        self._thread.start()

    def add(self, row: ApiLogRow) -> bool:
        """Queue ``row``; False when the queue is full (the caller writes it itself)."""
        with self._wake:
            if self._closed or len(self._queued) >= self._max_queued:
                return False
            self._queued.append(row)
            if len(self._queued) >= BATCH_ROWS:
                self._wake.notify()
        return True

    def flush(self) -> None:
        """Commit every queued row now (blocking); also waits for a batch another thread is
        committing, so rows queued before this call are readable when it returns."""
        # Rows are taken from the queue only under the write lock: a reader's flush cannot
        # find the queue empty while the writer thread still holds an uncommitted batch.
        with self._write_lock:
            while True:
                with self._wake:
                    count = min(BATCH_ROWS, len(self._queued))
                    batch = [self._queued.popleft() for _ in range(count)]
                if not batch:
                    return
                self._write(batch)

    def close(self) -> None:
        """Write what is queued and stop the thread."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout=30)
        self.flush()

    @property
    def queued(self) -> int:
        return len(self._queued)

    def _run(self) -> None:
        while True:
            with self._wake:
                if not self._closed and len(self._queued) < BATCH_ROWS:
                    self._wake.wait(self._interval_s)
                closed = self._closed
            try:
                self.flush()
            except Exception:  # noqa: BLE001 - the database is down: keep the rows, retry
                log.warning("api_log_write_failed", queued=self.queued, exc_info=True)
            if closed:
                return

    def _write(self, batch: list[ApiLogRow]) -> None:
        """Commit ``batch`` (the caller holds the write lock)."""
        try:
            with session_scope(self._settings) as session:
                insert_rows(session, batch)
            return
        except sa.exc.IntegrityError:
            pass  # some account was deleted meanwhile: find the rows that cannot stay
        except Exception:
            with self._wake:  # keep them, oldest first, for the next attempt
                self._queued.extendleft(reversed(batch))
            raise
        for row in batch:
            with session_scope(self._settings) as session:
                if session.get(IntegratedAccount, row["integrated_account_id"]) is None:
                    log.info("api_log_row_of_deleted_account_dropped", log_id=row["id"])
                    continue
                insert_rows(session, [row])


def insert_rows(session: Session, rows: list[ApiLogRow]) -> None:
    """One INSERT for ``rows`` (executemany), in the session's transaction; a Core statement
    on the table, which costs half the ORM's bulk insert per row."""
    session.execute(API_LOG_TABLE.insert(), rows)


_WRITERS: dict[tuple[str, float, int], ApiLogWriter] = {}
_WRITERS_LOCK = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child has none of the parent's threads (and may have inherited a held lock):
    # it starts its own writers on first use. Rows queued in the parent stay the parent's.
    global _WRITERS_LOCK
    _WRITERS.clear()
    _WRITERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def _key(settings: Settings) -> tuple[str, float, int]:
    return (
        settings.resolved_database_url,
        settings.api_log_flush_interval_s,
        settings.api_log_queue_max,
    )


def writer_for(settings: Settings) -> ApiLogWriter:
    """The process's writer for ``settings``' database (started on first use)."""
    with _WRITERS_LOCK:
        writer = _WRITERS.get(_key(settings))
        if writer is None:
            writer = _WRITERS[_key(settings)] = ApiLogWriter(settings)
        return writer


def flush_api_log(settings: Settings) -> None:
    """Commit this process's queued rows for ``settings``' database."""
    url = settings.resolved_database_url
    with _WRITERS_LOCK:
        writers = [w for key, w in _WRITERS.items() if key[0] == url]
    for writer in writers:
        writer.flush()


@atexit.register
def close_writers() -> None:
    """Write every queued row and stop the writers (the app's shutdown and exit call this)."""
    with _WRITERS_LOCK:
        writers = list(_WRITERS.values())
        _WRITERS.clear()
    for writer in writers:
        writer.close()
