"""Nothing is lost: a worker killed mid-delivery, and Redis down while an account is created.

These run the real processes — ``switchyard worker`` (RQ's forking worker) and
``switchyard dispatcher`` — against the test database; the Redis test uses a redis-server of
its own, because the shared one cannot be stopped.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from standardwebhooks import Webhook as Verifier

from core.settings import get_settings
from platform_api.webhooks.attempts import INTERRUPTED
from switchyard.app import create_app
from tests.platform_api.factories import SHOPIFY_CREDENTIALS, bearer, install, link_token
from tests.platform_api.processes import Processes, RedisServer, wait_until
from tests.platform_api.webhooks.conftest import create_webhook, deliveries, emit
from tests.platform_api.webhooks.receiver import Receiver, hang, ok

pytestmark = [pytest.mark.db, pytest.mark.slow]


def test_worker_killed_mid_delivery_still_delivers_once(
    client: TestClient,
    auth_headers: dict[str, str],
    receiver: Receiver,
    processes: Processes,
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("crash", hang(3), ok()))
    processes.start("dispatcher", "dispatcher")
    processes.start("worker", "worker", "--queue", "webhooks")
    event_id = emit()

    receiver.wait_for("crash", 1, timeout=30)  # the worker is inside the request now
    processes.kill("worker")
    processes.start("worker2", "worker", "--queue", "webhooks")

    receiver.wait_for("crash", 2, timeout=30)

    def settled() -> bool:
        log = deliveries(client, auth_headers, hook["id"])
        return bool(log) and log[0]["status"] == "succeeded"

    wait_until(settled)
    got = receiver.received("crash")
    assert [r.headers["webhook-id"] for r in got] == [event_id, event_id]
    Verifier(hook["secret"]).verify(got[1].body, got[1].headers)
    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "succeeded"
    interrupted, delivered = delivery["attempts"]
    assert interrupted["error"] == INTERRUPTED and interrupted["status_code"] is None
    assert delivered["status_code"] == 200
    successes = [a for a in delivery["attempts"] if a["status_code"] == 200]
    assert len(successes) == 1


def test_event_committed_while_redis_is_down_arrives_after_restart(
    private_redis: RedisServer,
    make_token: Callable[..., str],
    receiver: Receiver,
    processes: Processes,
) -> None:
    settings = get_settings()
    assert settings.redis_url == private_redis.url
    headers = bearer(make_token("development"))
    with TestClient(create_app(settings)) as api:
        hook = create_webhook(
            api, headers, receiver.plan("acct", ok()), event_types=["integrated_account:created"]
        )
        install(api, headers, "shopify")
        dispatcher = processes.start("dispatcher", "dispatcher")
        worker = processes.start("worker", "worker", "--queue", "webhooks")

        token = link_token(api, headers, tenant_id="tenant-during-outage")

        private_redis.crash()
        # The connect page's call needs no API token (whose cache lives in Redis).
        response = api.post(
            "/connect-account/session",
            json={
                "link_token": token,
                "integration_name": "shopify",
                "credentials": SHOPIFY_CREDENTIALS,
            },
        )
        assert response.status_code == 201, response.text
        account_id = response.json()["integrated_account_id"]
        private_redis.start()  # empty: whatever Redis held is gone
        if worker.poll() is not None:
            # RQ's worker exits when it loses Redis; a supervisor starts it again.
            processes.start("worker-again", "worker", "--queue", "webhooks")

        [got] = receiver.wait_for("acct", 1, timeout=30)
        envelope = Verifier(hook["secret"]).verify(got.body, got.headers)
        assert envelope["event"] == "integrated_account:created"
        assert envelope["payload"]["id"] == account_id
        assert envelope["payload"]["tenant_id"] == "tenant-during-outage"
        assert dispatcher.poll() is None  # the dispatcher rode out the outage
        wait_until(lambda: deliveries(api, headers, hook["id"])[0]["status"] == "succeeded")


def test_redis_crashed_mid_delivery_still_delivers_with_the_same_event_id(
    private_redis: RedisServer,
    make_token: Callable[..., str],
    receiver: Receiver,
    processes: Processes,
) -> None:
    settings = get_settings()
    headers = bearer(make_token("development"))
    with TestClient(create_app(settings)) as api:
        hook = create_webhook(api, headers, receiver.plan("inflight", hang(2), ok()))
        processes.start("dispatcher", "dispatcher")
        worker = processes.start("worker", "worker", "--queue", "webhooks")
        event_id = emit()

        receiver.wait_for("inflight", 1, timeout=30)  # the worker is inside the request now
        private_redis.crash()  # the queue, the job and its lease in Redis are gone
        private_redis.start()
        if worker.poll() is not None:
            processes.start("worker-again", "worker", "--queue", "webhooks")

        def delivered() -> bool:
            log = deliveries(api, headers, hook["id"])
            return bool(log) and log[0]["status"] == "succeeded"

        wait_until(delivered, timeout=60)
        got = receiver.received("inflight")
        assert {r.headers["webhook-id"] for r in got} == {event_id}  # at least once, one id
        for request in got:
            Verifier(hook["secret"]).verify(request.body, request.headers)
        [delivery] = deliveries(api, headers, hook["id"])
        assert sum(1 for a in delivery["attempts"] if a["status_code"] == 200) >= 1
