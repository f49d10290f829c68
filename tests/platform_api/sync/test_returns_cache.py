"""The returns cache's page write: one upsert per page, the same rows on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlmodel import col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.sync import cache
from platform_api.tables.common import as_utc
from platform_api.tables.sync import CachedReturn
from tests.platform_api.unified.helpers import make_account

pytestmark = pytest.mark.db


def _return(key: object, **fields: Any) -> dict[str, Any]:
    return {"id": key, "status": "open", "updated_at": "2026-01-09T21:00:00Z",
            "line_items": [{"product_id": "prod_1", "quantity": 2, "sku": "SBX-1"}],
            "refund_amount": None, "note": "Grüße, 東京", **fields}  # fmt: skip


def _write(settings: Settings, account: str, run_id: str, records: list[dict]) -> int:
    with session_scope(settings) as session:
        return cache.upsert_returns(
            session, environment_id="development", integrated_account_id=account,
            run_id=run_id, records=records,
        )  # fmt: skip


def _rows(settings: Settings, account: str) -> dict[str, CachedReturn]:
    with session_scope(settings) as session:
        rows = session.exec(
            select(CachedReturn).where(col(CachedReturn.integrated_account_id) == account)
        ).all()
        return {row.id: row for row in rows}


def test_a_page_is_inserted_with_its_columns_and_its_record_as_sent(
    settings: Settings, db: None
) -> None:
    account = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None)
    page = [_return("rma_1"), _return("rma_2", status=None, updated_at="not a time")]
    assert _write(settings, account, "srun_1", page) == 2
    rows = _rows(settings, account)
    assert {key: row.record for key, row in rows.items()} == {"rma_1": page[0], "rma_2": page[1]}
    assert rows["rma_1"].status == "open" and rows["rma_2"].status is None
    assert as_utc(rows["rma_1"].record_updated_at) == datetime(2026, 1, 9, 21, tzinfo=UTC)
    assert rows["rma_2"].record_updated_at is None  # unparseable: no time, no failure
    assert {row.run_id for row in rows.values()} == {"srun_1"}
    assert {row.environment_id for row in rows.values()} == {"development"}


def test_a_later_page_replaces_the_records_it_lists_and_keeps_the_others(
    settings: Settings, db: None
) -> None:
    account = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None)
    _write(settings, account, "srun_1", [_return("rma_1"), _return("rma_2")])
    first = _rows(settings, account)
    changed = _return("rma_2", status="completed", updated_at="2026-02-01T08:30:00+01:00")
    _write(settings, account, "srun_2", [changed])
    rows = _rows(settings, account)
    assert rows["rma_1"].record == first["rma_1"].record and rows["rma_1"].run_id == "srun_1"
    assert rows["rma_2"].record == changed and rows["rma_2"].status == "completed"
    assert rows["rma_2"].run_id == "srun_2"
    assert as_utc(rows["rma_2"].record_updated_at) == datetime(2026, 2, 1, 7, 30, tzinfo=UTC)
    assert rows["rma_2"].cached_at >= first["rma_2"].cached_at


def test_a_record_listed_twice_in_a_page_keeps_its_last_version(
    settings: Settings, db: None
) -> None:
    account = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None)
    page = [_return("rma_1", status="open"), _return(7), _return("rma_1", status="declined")]
    assert _write(settings, account, "srun_1", page) == 2
    rows = _rows(settings, account)
    assert rows["rma_1"].status == "declined"
    assert rows["7"].record["id"] == 7  # the key is the id as text; the record stays as sent


def test_an_empty_page_writes_nothing(settings: Settings, db: None) -> None:
    account = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None)
    assert _write(settings, account, "srun_1", []) == 0
    assert _rows(settings, account) == {}


def test_each_account_keeps_its_own_copy_of_a_return(settings: Settings, db: None) -> None:
    first = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None)
    second = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None,
                          tenant_id="tenant-2")  # fmt: skip
    _write(settings, first, "srun_1", [_return("rma_1", status="open")])
    _write(settings, second, "srun_2", [_return("rma_1", status="declined")])
    assert _rows(settings, first)["rma_1"].status == "open"
    assert _rows(settings, second)["rma_1"].status == "declined"
