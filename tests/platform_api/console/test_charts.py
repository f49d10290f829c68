"""The console's charts, as inline SVG (no script): the webhooks page's deliveries per hour
over the last 24 hours, stacked by status, and the sync page's records synced per hour; their
bars match the counts, rows outside the window or of another environment are left out. The
window follows the console's clock."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.services.webhooks import deliveries_per_hour
from platform_api.sync.stats import records_per_hour
from platform_api.tables.sync import SyncJobRun
from platform_api.tables.webhook import WebhookDelivery
from tests.platform_api.console.conftest import Clock
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.unified.providers import SANDBOX
from tests.platform_api.webhooks.conftest import create_webhook

pytestmark = pytest.mark.db

_BAR = re.compile(r'<rect class="bar-(\w+)"[^>]* data-hour="([^"]+)" data-count="(\d+)"')


def _deliveries(
    client: TestClient, make_token: Callable[..., str], environment: str, count: int
) -> list[str]:
    headers = {"Authorization": f"Bearer {make_token(environment)}"}
    webhook = create_webhook(client, headers, "https://receiver.example/switchyard")
    ids = []
    for _ in range(count):
        response = client.post("/v1/webhook/test", json={"id": webhook["id"]}, headers=headers)
        assert response.status_code == 202, response.text
        ids.append(response.json()["delivery_id"])
    return ids


def _set(delivery_id: str, *, status: str, created_at: object) -> None:
    with session_scope(get_settings()) as session:
        row = session.exec(select(WebhookDelivery).where(WebhookDelivery.id == delivery_id)).one()
        row.status, row.created_at = status, created_at  # type: ignore[assignment]


def test_chart_bars_match_deliveries_per_hour_and_status(
    operator_client: TestClient, make_token: Callable[..., str], clock: Clock
) -> None:
    now = clock.now  # 09:00 UTC
    ids = _deliveries(operator_client, make_token, "development", 6)
    for delivery_id, status, ago in zip(
        ids,
        ["succeeded", "succeeded", "failed", "succeeded", "pending", "succeeded"],
        [timedelta(minutes=10), timedelta(minutes=50), timedelta(minutes=20),
         timedelta(hours=5), timedelta(hours=5, minutes=1), timedelta(hours=30)],
        strict=True,
    ):  # fmt: skip
        _set(delivery_id, status=status, created_at=now - ago)
    (theirs,) = _deliveries(operator_client, make_token, "staging", 1)
    _set(theirs, status="failed", created_at=now - timedelta(minutes=5))

    page = operator_client.get("/console/development/webhooks")

    assert page.status_code == 200, page.text
    bars = {(hour, status): int(count) for status, hour, count in _BAR.findall(page.text)}
    assert bars == {
        ("2026-11-27 08:00 UTC", "succeeded"): 2,  # 08:10 and 08:50
        ("2026-11-27 08:00 UTC", "failed"): 1,
        ("2026-11-27 04:00 UTC", "succeeded"): 1,  # 04:00 sharp
        ("2026-11-27 03:00 UTC", "pending"): 1,  # 03:59; 30 h ago and staging's are left out
    }
    assert "<script" not in page.text and "<svg" in page.text


def test_deliveries_per_hour_counts_the_window_by_the_given_clock(
    operator_client: TestClient, make_token: Callable[..., str], clock: Clock
) -> None:
    (delivery,) = _deliveries(operator_client, make_token, "development", 1)
    _set(delivery, status="succeeded", created_at=clock.now - timedelta(hours=2, minutes=30))

    with session_scope(get_settings()) as session:
        hours = deliveries_per_hour(session, environment_id="development", now=clock.now)
        later = deliveries_per_hour(
            session, environment_id="development", now=clock.now + timedelta(days=1)
        )

    assert len(hours) == 24 and hours[-1][0] == clock.now
    assert [counts for _, counts in hours if counts] == [{"succeeded": 1}]
    assert hours[-4][1] == {"succeeded": 1}  # 06:30 is in the 06:00 hour
    assert not any(counts for _, counts in later)


def test_chart_without_deliveries_says_so(operator_client: TestClient, clock: Clock) -> None:
    page = operator_client.get("/console/development/webhooks")

    assert "No deliveries in the last 24 hours." in page.text and "<svg" not in page.text


# The sync page's chart: records synced per hour, by the hour each run ended.

_RECORDS_BAR = re.compile(r'<rect class="bar-records"[^>]* data-hour="([^"]+)" data-count="(\d+)"')


def _ended_run(environment: str, finished_at: object, **records: int) -> None:
    """A run of the sandbox account that ended at ``finished_at`` having read ``records`` per
    resource (a row as a worker leaves it)."""
    account = make_account(
        "sandbox", SANDBOX.credentials, base_url=None, environment=environment,
        tenant_id=new_id("tenant"),
    )  # fmt: skip
    stats = {f"wms/{name}": {"pages": 1, "records": n, "errors": 0} for name, n in records.items()}
    with session_scope(get_settings()) as session:
        session.add(SyncJobRun(
            id=new_id("run"), environment_id=environment, sync_job_id=new_id("job"),
            integrated_account_id=account, status="completed", resource_stats=stats,
            finished_at=finished_at,  # type: ignore[arg-type]
        ))  # fmt: skip


def test_sync_chart_bars_match_the_records_of_runs_per_hour(
    operator_client: TestClient, clock: Clock
) -> None:
    now = clock.now  # 09:00 UTC
    _ended_run("development", now - timedelta(minutes=10), orders=40, returns=2)
    _ended_run("development", now - timedelta(minutes=45), returns=8)
    _ended_run("development", now - timedelta(hours=5), orders=7)  # 04:00 sharp
    _ended_run("development", now - timedelta(hours=22, minutes=59), orders=3)  # 10:01 yesterday
    _ended_run("development", now - timedelta(hours=23, minutes=1), orders=100)  # 09:59: too old
    _ended_run("development", now - timedelta(hours=30), orders=100)
    _ended_run("staging", now - timedelta(minutes=5), orders=100)

    page = operator_client.get("/console/development/sync")

    assert page.status_code == 200, page.text
    bars = {hour: int(count) for hour, count in _RECORDS_BAR.findall(page.text)}
    assert bars == {
        "2026-11-27 08:00 UTC": 50,
        "2026-11-27 04:00 UTC": 7,
        "2026-11-26 10:00 UTC": 3,  # the window's first hour
    }
    assert "Records per hour, last 24 hours" in page.text and "60 records" in page.text
    assert "<script" not in page.text


def test_records_per_hour_counts_the_window_by_the_given_clock(
    operator_client: TestClient, clock: Clock
) -> None:
    _ended_run("development", clock.now - timedelta(hours=2, minutes=30), returns=12)

    with session_scope(get_settings()) as session:
        hours = records_per_hour(session, environment_id="development", now=clock.now)
        later = records_per_hour(
            session, environment_id="development", now=clock.now + timedelta(days=1)
        )

    assert len(hours) == 24 and hours[-1][0] == clock.now
    assert [count for _, count in hours if count] == [12]
    assert hours[-4][1] == 12  # 06:30 is in the 06:00 hour
    assert not any(count for _, count in later)


def test_sync_chart_without_records_says_so(operator_client: TestClient, clock: Clock) -> None:
    page = operator_client.get("/console/development/sync")

    assert "No records synced in the last 24 hours." in page.text and "<svg" not in page.text
