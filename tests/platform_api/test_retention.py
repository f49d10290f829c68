"""Retention: rows past their keep period are deleted (the daily job, `switchyard db prune`)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest
import redis
import sqlalchemy as sa
from fastapi.testclient import TestClient
from rq import Worker
from rq.serializers import JSONSerializer
from sqlalchemy.orm import Mapped
from sqlmodel import col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.queueing.queues import DEFAULT, get_queue
from platform_api.queueing.scheduler import make_scheduler
from platform_api.tables.api_log import ApiLogEntry
from platform_api.tables.common import utcnow
from platform_api.tables.link_token import LinkToken
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.webhook import WebhookAttempt, WebhookDelivery
from platform_api.tasks import retention
from platform_api.tasks.recurring import schedule_recurring_jobs
from platform_api.webhooks import attempts, dispatcher
from platform_api.webhooks.sender import Outcome
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.webhooks.conftest import create_webhook, emit

pytestmark = pytest.mark.db

DAY = timedelta(days=1)


def _link_token(settings: Settings, *, expires_at: datetime, used_at: datetime | None) -> str:
    token = LinkToken(
        id=new_id("lt"), environment_id="development", tenant_id="t1",
        token_hash=hashlib.sha256(new_id("x").encode()).hexdigest(),
        expires_at=expires_at, used_at=used_at,
    )  # fmt: skip
    with session_scope(settings) as session:
        session.add(token)
    return token.id


def _delivered_event(settings: Settings, at: datetime, *, succeed: bool) -> tuple[str, str]:
    """An event fanned out to the test webhook, its delivery attempted once (at ``at``)."""
    event_id = emit()
    with session_scope(settings) as session:
        ((_, delivery_ids),) = dispatcher.fan_out(session, settings, at)
    with session_scope(settings) as session:
        (work,) = attempts.claim(session, delivery_ids, settings, at)
    outcome = Outcome(status_code=200 if succeed else 500, duration_ms=5, error=None)
    with session_scope(settings) as session:
        attempts.record(session, [(work, outcome)], settings, at)
    with session_scope(settings) as session:  # the clock of the rows: ``at``
        session.execute(
            sa.update(OutboxEvent).where(col(OutboxEvent.id) == event_id).values(created_at=at)
        )
    return event_id, delivery_ids[0]


def _ids(settings: Settings, table: type, column: Mapped[str]) -> set[str]:
    with session_scope(settings) as session:
        return set(session.exec(select(column)).all())


def test_prune_deletes_exactly_what_is_past_its_keep_period(
    client: TestClient, auth_headers: dict[str, str], settings: Settings
) -> None:
    now = utcnow()
    account = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None)
    old_log, new_log = new_id("log"), new_id("log")
    with session_scope(settings) as session:
        for log_id, at in ((old_log, now - 31 * DAY), (new_log, now - 29 * DAY)):
            session.add(ApiLogEntry(
                id=log_id, environment_id="development", integrated_account_id=account,
                kind="unified", method="GET", path="/p", status=200, duration_ms=1.0,
                request_id="req_1", created_at=at,
            ))  # fmt: skip
    spent = _link_token(settings, expires_at=now - 1.5 * DAY, used_at=now - 2 * DAY)
    expired = _link_token(settings, expires_at=now - 2 * DAY, used_at=None)
    fresh_spent = _link_token(settings, expires_at=now + DAY, used_at=now - DAY / 2)
    valid = _link_token(settings, expires_at=now + DAY, used_at=None)

    create_webhook(client, auth_headers, "https://receiver.example/hook")
    old_done, old_done_delivery = _delivered_event(settings, now - 8 * DAY, succeed=True)
    old_pending, _ = _delivered_event(settings, now - 8 * DAY, succeed=False)  # retrying
    recent_done, _ = _delivered_event(settings, now - 6 * DAY, succeed=True)

    deleted = retention.prune(settings, now=now)

    assert _ids(settings, ApiLogEntry, col(ApiLogEntry.id)) >= {new_log}
    assert old_log not in _ids(settings, ApiLogEntry, col(ApiLogEntry.id))
    assert _ids(settings, LinkToken, col(LinkToken.id)) == {fresh_spent, valid}
    assert {spent, expired}.isdisjoint(_ids(settings, LinkToken, col(LinkToken.id)))
    events = _ids(settings, OutboxEvent, col(OutboxEvent.id))
    assert old_done not in events and {old_pending, recent_done} <= events
    assert old_done_delivery not in _ids(settings, WebhookDelivery, col(WebhookDelivery.id))
    with session_scope(settings) as session:  # its attempts went with it
        gone = session.exec(
            select(WebhookAttempt).where(col(WebhookAttempt.delivery_id) == old_done_delivery)
        ).all()
    assert gone == []
    assert deleted["api_log"] == 1 and deleted["link_token"] == 2
    assert deleted["outbox_event"] == 1


def test_zero_days_keeps_rows_forever(settings: Settings, db: None) -> None:
    now = utcnow()
    forever = settings.model_copy(update={"retention_link_token_days": 0})
    expired = _link_token(settings, expires_at=now - 400 * DAY, used_at=None)
    assert "link_token" not in retention.prune(forever, now=now)
    assert expired in _ids(settings, LinkToken, col(LinkToken.id))


def test_the_scheduler_runs_retention_daily_through_a_worker(
    settings: Settings, db: None, redis_client: redis.Redis
) -> None:
    scheduler = make_scheduler(redis_client)
    schedule_recurring_jobs(scheduler)
    schedule_recurring_jobs(scheduler)  # a restart registers it again, not twice
    (job,) = [j for j in scheduler.get_jobs() if j.id == retention.JOB_ID]
    assert job.meta["cron_string"] == retention.CRON
    assert job.meta.get("use_local_timezone") is False
    expired = _link_token(settings, expires_at=utcnow() - 3 * DAY, used_at=None)

    scheduler.enqueue_job(job)  # what the scheduler does at 03:17 UTC
    queue = get_queue(DEFAULT, redis_client)
    Worker([queue], connection=redis_client, serializer=JSONSerializer).work(burst=True)

    finished = queue.fetch_job(retention.JOB_ID)
    assert finished is not None and finished.is_finished, finished and finished.exc_info
    pruned = finished.return_value()
    assert pruned is not None
    assert pruned["link_token"] >= 1
    assert expired not in _ids(settings, LinkToken, col(LinkToken.id))
    # Still scheduled for the next day.
    assert [j.id for j in scheduler.get_jobs()].count(retention.JOB_ID) == 1
