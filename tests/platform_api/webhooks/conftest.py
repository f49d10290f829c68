"""Webhook test fixtures: short retry settings, a scripted receiver, an in-process pump.

The pump runs what production runs — a dispatcher pass, then a real RQ ``SimpleWorker`` in
burst mode on the real Redis — until a condition holds (bounded wait, no sleeps to tune).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from rq import SimpleWorker
from rq.serializers import JSONSerializer

from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.queueing.queues import WEBHOOKS, get_queue
from platform_api.services.events import record_event
from platform_api.webhooks.dispatcher import dispatch_once
from tests.conftest import ServerThread
from tests.platform_api.webhooks.receiver import Receiver

# Short schedules so retries, timeouts and leases play out in about a second.
WEBHOOK_ENV = {
    "SWITCHYARD_WEBHOOK_ALLOWED_HOSTS": '["127.0.0.1", "localhost"]',
    "SWITCHYARD_WEBHOOK_RETRY_SCHEDULE": "[0, 0.2, 0.2]",
    "SWITCHYARD_WEBHOOK_RETRY_JITTER": "0",
    "SWITCHYARD_WEBHOOK_TIMEOUT_SECONDS": "1",
    "SWITCHYARD_WEBHOOK_DISABLE_AFTER_EXHAUSTED": "2",
    "SWITCHYARD_WEBHOOK_DISPATCH_INTERVAL_SECONDS": "0.2",
    "SWITCHYARD_WEBHOOK_REQUEUE_GRACE_SECONDS": "0.5",
}


@pytest.fixture
def settings(
    _test_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    for key, value in WEBHOOK_ENV.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hooks = Receiver()
    with ServerThread(hooks.app) as server:
        hooks.base_url = server.url
        yield hooks


@pytest.fixture
def pump(settings: Settings, redis_client: redis.Redis) -> Callable[..., None]:
    """``pump(until)``: dispatch and work until ``until()`` is true (at most ``timeout`` s);
    ``pump(None, seconds)`` keeps dispatching and working for that long."""
    queue = get_queue(WEBHOOKS, redis_client)

    def _pump(until: Callable[[], bool] | None, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dispatch_once(get_settings(), redis_client)
            worker = SimpleWorker([queue], connection=redis_client, serializer=JSONSerializer)
            worker.work(burst=True, logging_level="WARNING")
            if until is not None and until():
                return
            time.sleep(0.05)
        if until is not None:
            raise AssertionError("condition not reached in time")

    return _pump


def emit(
    event_type: str = "integrated_account:created",
    payload: dict[str, Any] | None = None,
    environment: str = "development",
) -> str:
    """Record an event in a committed transaction, as a feature would; returns its id."""
    settings = get_settings()
    with session_scope(settings) as session:
        event = record_event(
            session,
            environment_id=environment,
            event_type=event_type,
            payload=payload if payload is not None else {"id": "acct_1", "tenant_id": "t1"},
            settings=settings,
        )
        return event.id


def create_webhook(client: TestClient, headers: dict[str, str], url: str, **fields: Any) -> dict:
    response = client.post("/v1/webhook", json={"target_url": url, **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def deliveries(
    client: TestClient, headers: dict[str, str], webhook_id: str, **params: str
) -> list[dict[str, Any]]:
    response = client.get(f"/v1/webhook/{webhook_id}/deliveries", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def settled(client: TestClient, headers: dict[str, str], webhook_id: str, count: int = 1):
    """A condition for ``pump``: ``count`` deliveries exist and none is pending."""

    def _check() -> bool:
        log = deliveries(client, headers, webhook_id)
        return len(log) >= count and all(d["status"] != "pending" for d in log)

    return _check
