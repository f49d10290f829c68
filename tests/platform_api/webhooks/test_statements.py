"""How the delivery path's statements find their rows (see platform_api/webhooks/tables.py)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.webhooks.tables import DELIVERY, delivery_transaction, in_list


def _where(dialect: sa.Dialect) -> str:
    statement = sa.select(DELIVERY.c.id).where(in_list(DELIVERY.c.id))
    return str(statement.compile(dialect=dialect)).split("WHERE", 1)[1].strip()


def test_a_list_of_ids_is_one_array_on_postgresql_and_in_elsewhere() -> None:
    # One SQL text for any number of ids: prepared once, planned for the ids given.
    assert _where(postgresql.dialect()) == "webhook_delivery.id = ANY (%(ids)s::VARCHAR(40)[])"
    # A plain IN, with no "= 1" after it that would keep SQLite off the primary key.
    assert _where(sqlite.dialect()) == "webhook_delivery.id IN (__[POSTCOMPILE_ids])"


@pytest.mark.db
def test_a_list_of_ids_finds_those_rows(settings: Settings, db: None) -> None:
    with session_scope(settings) as session:
        found = session.connection().execute(
            sa.select(sa.literal(1)).where(in_list(sa.literal("b"), "names")),
            {"names": ["a", "b"]},
        )
        assert found.scalar() == 1


@pytest.mark.db
def test_a_delivery_transaction_plans_each_statement_and_does_not_wait_for_the_disk(
    settings: Settings, db: None
) -> None:
    with session_scope(settings) as session:
        connection = session.connection()
        if connection.dialect.name != "postgresql":
            pytest.skip("PostgreSQL settings")
        delivery_transaction(connection)
        show = connection.exec_driver_sql
        assert show("SHOW plan_cache_mode").scalar() == "force_custom_plan"
        assert show("SHOW synchronous_commit").scalar() == "off"
    with session_scope(settings) as session:  # only that transaction
        assert session.connection().exec_driver_sql("SHOW synchronous_commit").scalar() == "on"
