"""Database engine, sessions and migrations (SQLite by default, PostgreSQL via DATABASE_URL)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

from core.settings import Settings

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


@lru_cache(maxsize=8)
def _engine_for(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            # WAL lets the API, workers and CLI read while one of them writes.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

    else:
        engine = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    # A forked child (an RQ work horse) must not use the parent's pooled connections: two
    # processes on one connection corrupt its state. The child drops them without closing
    # them (they are still the parent's) and opens its own.
    os.register_at_fork(after_in_child=lambda: engine.dispose(close=False))
    return engine


def get_engine(settings: Settings) -> Engine:
    """The engine for the configured database (one per URL per process)."""
    return _engine_for(settings.resolved_database_url)


@contextmanager
def session_scope(settings: Settings) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    with Session(get_engine(settings), expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def alembic_config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # '%' is alembic's interpolation character; URLs may contain it.
    url = settings.resolved_database_url.replace("%", "%%")
    config.set_main_option("sqlalchemy.url", url)
    return config


def migrate(settings: Settings) -> None:
    """Apply every migration (all branch heads)."""
    get_engine(settings)  # creates the SQLite file's directory when needed
    command.upgrade(alembic_config(settings), "heads")
