"""Migration 0003 creates exactly the webhook tables the models describe."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

from core.settings import get_settings
from platform_api.db import get_engine
from tests.platform_api.test_core_migration import _table_of

pytestmark = pytest.mark.db

WEBHOOK_TABLES = {"webhook", "webhook_delivery", "webhook_attempt"}


def test_migrated_webhook_schema_matches_the_models(db: None) -> None:
    with get_engine(get_settings()).connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diffs = compare_metadata(context, SQLModel.metadata)
    ours = [diff for diff in diffs if _table_of(diff) in WEBHOOK_TABLES]
    assert ours == []
