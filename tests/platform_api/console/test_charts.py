"""The webhooks page's chart: deliveries per hour over the last 24 hours, stacked by status,
as inline SVG (no script); its bars match the counts, deliveries outside the window or of
another environment are left out. The window follows the console's clock."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services.webhooks import deliveries_per_hour
from platform_api.tables.webhook import WebhookDelivery
from tests.platform_api.console.conftest import Clock
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
