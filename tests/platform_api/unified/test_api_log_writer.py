"""API-log rows leave the request path without being lost: batched, bounded, flushed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlmodel import col

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.services.api_log_writer import ApiLogRow, ApiLogWriter
from platform_api.tables.api_log import ApiLogEntry
from platform_api.tables.common import utcnow
from switchyard.app import create_app
from tests.platform_api.unified.providers import HUBSPOT

pytestmark = pytest.mark.db


def _rows(settings: Settings, account_id: str) -> int:
    with session_scope(settings) as session:
        statement = sa.select(sa.func.count()).where(
            col(ApiLogEntry.integrated_account_id) == account_id
        )
        return int(session.execute(statement).scalar_one())


def _entry(account_id: str) -> ApiLogRow:
    return {
        "id": new_id("log"), "environment_id": "development",
        "integrated_account_id": account_id, "kind": "unified", "method": "GET",
        "path": "/unified/crm/contacts", "status": 200, "upstream_status": None, "error": None,
        "duration_ms": 1.0, "request_id": new_id("req"), "created_at": utcnow(),
    }  # fmt: skip


def test_a_thousand_calls_leave_a_thousand_rows(
    client: TestClient, auth_headers: dict[str, str], settings: Settings, upstream_for
) -> None:
    account = upstream_for(HUBSPOT).account_id
    params = {"integrated_account_id": account, "skip_api_call": "true"}
    for _ in range(1000):
        response = client.get("/v1/unified/crm/contacts", params=params, headers=auth_headers)
        assert response.status_code == 200
    # The list route commits what this process queued before it reads.
    listed = client.get(
        "/v1/api-log", params={"integrated_account_id": account, "limit": 1}, headers=auth_headers
    )
    assert listed.status_code == 200
    assert _rows(settings, account) == 1000


def test_a_full_queue_makes_the_call_write_its_own_row(
    settings: Settings, db: None, upstream_for, make_token: Callable[..., str]
) -> None:
    tiny = settings.model_copy(update={"api_log_queue_max": 1, "api_log_flush_interval_s": 10})
    app: FastAPI = create_app(tiny)
    account = upstream_for(HUBSPOT).account_id
    headers = {"Authorization": f"Bearer {make_token()}"}
    params = {"integrated_account_id": account, "skip_api_call": "true"}
    with TestClient(app) as client:
        for _ in range(5):
            assert client.get("/v1/unified/crm/contacts", params=params, headers=headers).is_success
        # One row waits in the queue (flushed every 10 s); the other four were written at once.
        assert _rows(settings, account) >= 4
    assert _rows(settings, account) == 5  # the app's shutdown flushed the queue


def test_rows_of_a_deleted_account_do_not_take_the_batch_down(
    settings: Settings, db: None, upstream_for
) -> None:
    kept, deleted = upstream_for(HUBSPOT).account_id, "acct_gone_before_the_flush"
    writer = ApiLogWriter(settings.model_copy(update={"api_log_flush_interval_s": 10}))
    try:
        for account in (kept, deleted, kept):
            assert writer.add(_entry(account))
        writer.flush()
    finally:
        writer.close()
    assert _rows(settings, kept) == 2
    assert _rows(settings, deleted) == 0


def test_closing_the_writer_commits_what_is_queued(
    settings: Settings, db: None, upstream_for
) -> None:
    account = upstream_for(HUBSPOT).account_id
    writer = ApiLogWriter(settings.model_copy(update={"api_log_flush_interval_s": 10}))
    for _ in range(25):
        writer.add(_entry(account))
    assert _rows(settings, account) == 0  # nothing written until the interval or a flush
    writer.close()
    assert _rows(settings, account) == 25
    assert not writer.add(_entry(account))  # a closed writer hands rows back to the caller
