"""A dispatcher pass says when it left events behind, so the next one starts at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from fastapi.testclient import TestClient

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.queueing.queues import WEBHOOKS, get_queue
from platform_api.tables.common import utcnow
from platform_api.webhooks.dispatcher import dispatch_pass, fan_out_events, sweep_due
from tests.platform_api.webhooks.conftest import create_webhook, emit

pytestmark = pytest.mark.db


def test_a_pass_that_reaches_its_limit_reports_a_backlog(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
) -> None:
    create_webhook(client, auth_headers, "https://receiver.example/hook")
    for _ in range(3):
        emit()

    first = dispatch_pass(settings, redis_client, fan_out_limit=2)
    second = dispatch_pass(settings, redis_client, fan_out_limit=2)

    assert (first.enqueued, first.backlog) == (2, True)
    assert (second.enqueued, second.backlog) == (1, False)
    queued = get_queue(WEBHOOKS, redis_client).get_jobs()
    assert sorted(len(job.args[0]) for job in queued) == [1, 2]


def test_events_nobody_subscribed_to_still_count_towards_the_limit(
    settings: Settings, db: None
) -> None:
    for _ in range(2):
        emit()  # no webhook: no deliveries, but the events are dispatched
    with session_scope(settings) as session:
        jobs, backlog = fan_out_events(session, settings, utcnow(), limit=2)
    assert (jobs, backlog) == ([], True)
    with session_scope(settings) as session:
        assert fan_out_events(session, settings, utcnow(), limit=2) == ([], False)


def test_due_deliveries_whose_jobs_still_wait_are_no_backlog(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
) -> None:
    create_webhook(client, auth_headers, "https://receiver.example/hook")
    for _ in range(2):
        emit()
    dispatch_pass(settings, redis_client)  # both enqueued, one job waiting in Redis
    later = utcnow() + timedelta(seconds=settings.webhook_requeue_grace_seconds + 1)

    with session_scope(settings) as session:
        jobs, backlog = sweep_due(session, redis_client, settings, later, limit=2)

    # Past the grace period they are candidates again, but their job still waits: nothing to
    # enqueue, and no reason for the dispatcher to sweep again before its next wait.
    assert (jobs, backlog) == ([], False)
