"""A delivery's result is written only under the lease its job holds."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.tables.common import utcnow
from platform_api.tables.webhook import WebhookAttempt, WebhookDelivery
from platform_api.webhooks import attempts, dispatcher
from platform_api.webhooks.attempts import Work
from platform_api.webhooks.sender import Outcome
from tests.platform_api.webhooks.conftest import create_webhook, emit

pytestmark = pytest.mark.db

FAILED = Outcome(status_code=500, duration_ms=12, error=None)
DELIVERED = Outcome(status_code=200, duration_ms=8, error=None)


def _delivery_id(settings: Settings, client: TestClient, headers: dict[str, str]) -> str:
    create_webhook(client, headers, "https://receiver.example/hook")
    emit()
    with session_scope(settings) as session:
        jobs = dispatcher.fan_out(session, settings, utcnow())
    ((_, (delivery_id,)),) = jobs
    return delivery_id


def _claim(settings: Settings, delivery_id: str, at: datetime) -> Work:
    with session_scope(settings) as session:
        (work,) = attempts.claim(session, [delivery_id], settings, at)
    return work


def test_a_late_result_changes_nothing(
    client: TestClient, auth_headers: dict[str, str], settings: Settings
) -> None:
    delivery_id = _delivery_id(settings, client, auth_headers)
    start = utcnow()
    slow = _claim(settings, delivery_id, start)  # this job stalls past its lease
    lease = timedelta(seconds=attempts.lease_seconds(settings, 1) + 1)
    fresh = _claim(settings, delivery_id, start + lease)  # another job takes the delivery
    assert fresh.attempt_number == slow.attempt_number + 1

    with session_scope(settings) as session:
        attempts.record(session, [(fresh, DELIVERED)], settings, start + lease)
    with session_scope(settings) as session:
        attempts.record(session, [(slow, FAILED)], settings, start + lease * 2)  # too late

    with session_scope(settings) as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        assert delivery is not None
        assert delivery.status == "succeeded" and delivery.next_attempt_at is None
        rows = {a.id: a for a in session.exec(select(WebhookAttempt)).all()}
    assert rows[fresh.attempt_id].status_code == 200
    assert rows[slow.attempt_id].status_code is None  # still "interrupted", not the late 500
    assert rows[slow.attempt_id].error == attempts.INTERRUPTED


def test_a_late_result_cannot_schedule_a_retry_over_a_running_attempt(
    client: TestClient, auth_headers: dict[str, str], settings: Settings
) -> None:
    delivery_id = _delivery_id(settings, client, auth_headers)
    start = utcnow()
    slow = _claim(settings, delivery_id, start)
    lease = timedelta(seconds=attempts.lease_seconds(settings, 1) + 1)
    fresh = _claim(settings, delivery_id, start + lease)
    with session_scope(settings) as session:
        summary = attempts.record(session, [(slow, FAILED)], settings, start + lease)
    assert summary == {"succeeded": 0, "retrying": 0, "failed": 0}
    with session_scope(settings) as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        assert delivery is not None
        # The running attempt still holds its lease; nothing was rescheduled under it.
        assert delivery.locked_until is not None and delivery.attempt_count == 2
    with session_scope(settings) as session:
        assert (
            attempts.record(session, [(fresh, DELIVERED)], settings, start + lease)["succeeded"]
            == 1
        )


def test_a_late_success_changes_nothing(
    client: TestClient, auth_headers: dict[str, str], settings: Settings
) -> None:
    delivery_id = _delivery_id(settings, client, auth_headers)
    start = utcnow()
    slow = _claim(settings, delivery_id, start)
    lease = timedelta(seconds=attempts.lease_seconds(settings, 1) + 1)
    fresh = _claim(settings, delivery_id, start + lease)
    with session_scope(settings) as session:
        summary = attempts.record(session, [(slow, DELIVERED)], settings, start + lease)
    assert summary == {"succeeded": 0, "retrying": 0, "failed": 0}
    with session_scope(settings) as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        assert delivery is not None
        # Still pending under the running attempt's lease, not marked succeeded by the old one.
        assert delivery.status == "pending" and delivery.locked_until is not None
    with session_scope(settings) as session:
        assert attempts.record(session, [(fresh, FAILED)], settings, start + lease)["retrying"] == 1
