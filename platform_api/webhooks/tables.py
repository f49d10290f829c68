"""The webhook tables as SQLAlchemy Core tables, and how delivery statements find their rows.

The delivery path builds its statements once, at import, from these tables and runs them on
the session's connection: per job, building ORM statements and loading ORM objects cost more
CPU than the database took to answer them.

Every statement of a job names its rows by primary key (a hundred ids); how they are found
is left to no chance, because on PostgreSQL the planner got it wrong in two ways, each costing
time that grew with the tables (benchmarks/RESULTS.md, "Webhooks"):

- given the state checks (``status = 'pending'``, ``next_attempt_at <= now``), it scanned
  the due index and filtered by id, reading every pending delivery for each job; the checks
  are therefore written so that no index can serve them (``checked``);
- psycopg prepares a statement run five times on a connection, and PostgreSQL then reuses a
  generic plan, made while the tables were small: a sequential scan, kept as they grew. A
  delivery transaction is planned for the ids it is given instead (``delivery_transaction``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal
from sqlmodel import SQLModel

from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.webhook import Webhook, WebhookAttempt, WebhookDelivery


def core_table(model: type[SQLModel]) -> sa.Table:
    return cast(sa.Table, model.__table__)  # type: ignore[attr-defined]  # set for table=True


WEBHOOK = core_table(Webhook)
DELIVERY = core_table(WebhookDelivery)
ATTEMPT = core_table(WebhookAttempt)
OUTBOX = core_table(OutboxEvent)


class InList(ColumnElement[bool]):
    """``column`` is one of the list bound as ``name`` at execution (a Python list).

    PostgreSQL gets ``column = ANY(:name)``: one array parameter, so the same SQL text for
    any number of ids (``IN (:name_1, ...)`` changes with it, and each length is parsed and
    prepared anew). Elsewhere (SQLite) it is ``IN``.
    """

    type = sa.Boolean()
    _is_implicitly_boolean = True  # a condition already: SQLite gets no "= 1" after it
    inherit_cache = True
    _traverse_internals = [
        ("column", InternalTraversal.dp_clauseelement),
        ("name", InternalTraversal.dp_string),
    ]

    def __init__(self, column: sa.ColumnElement[Any], name: str) -> None:
        self.column = column
        self.name = name


@compiles(InList)
def _in(element: InList, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.column.in_(sa.bindparam(element.name, expanding=True)), **kw)


@compiles(InList, "postgresql")
def _any(element: InList, compiler: SQLCompiler, **kw: Any) -> str:
    array = sa.bindparam(element.name, type_=postgresql.ARRAY(element.column.type))
    return compiler.process(element.column == sa.any_(array), **kw)


def in_list(column: sa.ColumnElement[Any], name: str = "ids") -> InList:
    """``column`` is one of the values of the list parameter ``name`` (see ``InList``)."""
    return InList(column, name)


def checked(*conditions: sa.ColumnElement[bool]) -> sa.ColumnElement[bool]:
    """``conditions``, all true, as a check on rows found otherwise (by primary key): inside
    a function call, where the planner cannot use them to pick an index."""
    return sa.func.coalesce(sa.and_(*conditions), sa.false())


# Transaction-local (set_config's third argument): see ``delivery_transaction``.
_DELIVERY_TRANSACTION = sa.text(
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true),"
    " set_config('synchronous_commit', 'off', true)"
)


def delivery_transaction(connection: sa.Connection) -> None:
    """Set up, on PostgreSQL, a transaction of the delivery path (fan-out, sweep, claim,
    record):

    - plan its statements for the values they are given, not with a generic plan cached on
      the connection (see the module's docstring);
    - commit without waiting for the write-ahead log to reach the disk (3-7 ms a commit on
      the benchmark's host, two of them between an event's commit and its arrival). A crash
      of the database server can lose the last fraction of a second of these commits, never
      the events (the outbox is written with the change, by the caller, durably): a lost
      fan-out is fanned out again, a lost claim or result is attempted again. That is at
      least once, as delivery always is (a worker dying mid-send does the same).
    """
    if connection.dialect.name == "postgresql":
        connection.execute(_DELIVERY_TRANSACTION)


def insert_rows(connection: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` (dicts with the same keys). On PostgreSQL as one statement, the values
    bound as one array per column: executemany sends a statement per row there, each parsed
    and planned on its own."""
    if not rows:
        return
    if connection.dialect.name != "postgresql":
        connection.execute(table.insert(), rows)
        return
    columns = tuple(rows[0])
    connection.execute(
        _insert_from_arrays(table, columns), {name: [row[name] for row in rows] for name in columns}
    )


@lru_cache(maxsize=16)
def _insert_from_arrays(table: sa.Table, columns: tuple[str, ...]) -> sa.Insert:
    """``INSERT INTO table (columns) SELECT * FROM unnest(:column_1, ...)``."""
    arrays = [sa.bindparam(name, type_=postgresql.ARRAY(table.c[name].type)) for name in columns]
    values = (
        sa.func.unnest(*arrays)
        .table_valued(*(sa.column(name, table.c[name].type) for name in columns))
        .render_derived(name="new_row")
    )
    return table.insert().from_select(list(columns), sa.select(values))
