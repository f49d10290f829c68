"""The platform-core migration creates exactly the tables the models describe."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

from core.settings import get_settings
from platform_api.db import get_engine

pytestmark = pytest.mark.db

CORE_TABLES = {"installed_integration", "integrated_account", "link_token"}


def _table_of(diff: Any) -> str | None:
    if isinstance(diff, list):  # modify_* diffs come grouped per column
        return _table_of(diff[0])
    kind, *rest = diff
    if kind.endswith("_table"):
        return rest[0].name
    if kind.endswith(("_index", "_constraint")):
        return rest[0].table.name
    if kind.endswith("_column"):
        return rest[1]
    return rest[1] if kind.startswith("modify_") else None


def test_migrated_schema_matches_the_models(db: None) -> None:
    with get_engine(get_settings()).connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diffs = compare_metadata(context, SQLModel.metadata)
    ours = [diff for diff in diffs if _table_of(diff) in CORE_TABLES]
    assert ours == []
