"""Delivery end to end: outbox → dispatcher → RQ worker → a real receiver on loopback.

Assertions are on what the receiver got and on the delivery log, never on timings, except
lower bounds a retry rule promises (Retry-After).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import IntegrityError
from standardwebhooks import Webhook as Verifier
from standardwebhooks.webhooks import WebhookVerificationError

from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.services.events import record_event
from platform_api.tables.webhook import WebhookDelivery
from platform_api.webhooks.retry import next_delay
from platform_api.webhooks.signing import signed_headers
from tests.platform_api.webhooks.conftest import create_webhook, deliveries, emit, settled
from tests.platform_api.webhooks.receiver import (
    Receiver,
    gone,
    hang,
    ok,
    redirect,
    status,
    too_many,
)

pytestmark = pytest.mark.db

Pump = Callable[..., None]


def test_delivery_is_signed_per_standard_webhooks(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("a", ok()))
    event_id = emit("integrated_account:created", {"id": "acct_1", "tenant_id": "t-1"})
    pump(settled(client, auth_headers, hook["id"]))

    [got] = receiver.received("a")
    assert got.headers["webhook-id"] == event_id
    assert got.headers["content-type"] == "application/json"
    envelope = Verifier(hook["secret"]).verify(got.body, got.headers)
    assert envelope["id"] == event_id
    assert envelope["event"] == "integrated_account:created"
    assert envelope["payload"] == {"id": "acct_1", "tenant_id": "t-1"}
    assert envelope["environment_id"] == "development"
    assert envelope["webhook_id"] == hook["id"]
    assert envelope["created_at"].endswith("Z")

    with pytest.raises(WebhookVerificationError):
        Verifier(hook["secret"]).verify(got.body.replace(b"t-1", b"t-2"), got.headers)
    stale = signed_headers(hook["secret"], event_id, got.body, timestamp=int(time.time()) - 10 * 60)
    with pytest.raises(WebhookVerificationError):
        Verifier(hook["secret"]).verify(got.body, stale)
    other_secret = create_webhook(client, auth_headers, receiver.url("b"))["secret"]
    with pytest.raises(WebhookVerificationError):
        Verifier(other_secret).verify(got.body, got.headers)

    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "succeeded"
    assert delivery["event_id"] == event_id
    assert delivery["event_type"] == "integrated_account:created"
    assert delivery["next_attempt_at"] is None
    [attempt] = delivery["attempts"]
    assert attempt["status_code"] == 200 and attempt["error"] is None
    assert attempt["duration_ms"] >= 0 and attempt["attempted_at"]


def test_failures_are_retried_with_the_same_webhook_id(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    url = receiver.plan("flaky", status(500, "database down"), status(503), ok())
    hook = create_webhook(client, auth_headers, url)
    event_id = emit()
    pump(settled(client, auth_headers, hook["id"]))

    got = receiver.received("flaky")
    assert [r.headers["webhook-id"] for r in got] == [event_id] * 3
    assert len({r.body for r in got}) == 1  # the same body on every attempt
    for request in got:
        Verifier(hook["secret"]).verify(request.body, request.headers)
    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "succeeded"
    assert delivery["attempt_count"] == 3
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 503, 200]
    assert delivery["attempts"][0]["error"] == "HTTP 500: database down"


def test_retry_after_is_honoured(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("busy", too_many("1"), ok()))
    emit()
    pump(settled(client, auth_headers, hook["id"]))

    first, second = receiver.received("busy")
    # The schedule would retry after 0.2 s; the receiver asked for 1 s.
    assert second.at - first.at >= 1.0
    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert [a["status_code"] for a in delivery["attempts"]] == [429, 200]


def test_next_delay_follows_schedule_jitter_and_retry_after() -> None:
    defaults = Settings()
    assert defaults.webhook_retry_schedule == [0, 5, 30, 120, 600, 1800, 3600, 10800, 21600, 43200]
    assert defaults.webhook_timeout_seconds == 15
    now = datetime.now(UTC)
    delays = [next_delay(defaults, 1, now=now) for _ in range(50)]
    assert all(d is not None and 4.0 <= d <= 6.0 for d in delays)  # 5 s +/- 20%
    assert len(set(delays)) > 1  # jittered
    assert next_delay(defaults, 10, now=now) is None  # ten attempts, then exhausted
    when = (now + timedelta(seconds=90)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    asked = next_delay(defaults, 1, status_code=503, retry_after=when, now=now)
    assert asked is not None
    assert 85 <= asked <= 91
    scheduled = next_delay(defaults, 1, status_code=500, retry_after="90", now=now)
    assert scheduled is not None
    assert scheduled <= 6.0


def test_410_disables_the_webhook_at_once(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("gone", gone()))
    emit()
    pump(settled(client, auth_headers, hook["id"]))

    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "failed"
    assert delivery["attempt_count"] == 1  # not retried
    webhook = client.get(f"/v1/webhook/{hook['id']}", headers=auth_headers).json()
    assert webhook["is_active"] is False
    assert "410" in webhook["disabled_reason"]
    emit()
    pump(None, 0.5)
    assert len(receiver.received("gone")) == 1
    assert len(deliveries(client, auth_headers, hook["id"])) == 1


def test_a_hanging_receiver_times_out_and_is_retried(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("slow", hang(1.5), ok()))
    emit()
    pump(settled(client, auth_headers, hook["id"]))

    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "succeeded"
    first, second = delivery["attempts"]
    assert first["status_code"] is None and first["error"].startswith("timed out")
    assert second["status_code"] == 200


def test_redirects_are_not_followed(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    url = receiver.plan("moved", redirect(f"{receiver.base_url}/elsewhere"))
    hook = create_webhook(client, auth_headers, url)
    emit()
    pump(settled(client, auth_headers, hook["id"]))

    assert receiver.received("elsewhere") == []
    assert len(receiver.received("moved")) == 3  # every attempt of the schedule
    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "failed"
    assert delivery["failure_reason"] == "retries exhausted after 3 attempts"
    assert all(a["status_code"] == 302 for a in delivery["attempts"])
    assert "not followed" in delivery["attempts"][0]["error"]


def test_consecutive_exhausted_events_disable_the_webhook(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("down", status(500)))
    webhook_url = f"/v1/webhook/{hook['id']}"
    emit()
    pump(settled(client, auth_headers, hook["id"], count=1))
    assert client.get(webhook_url, headers=auth_headers).json()["is_active"] is True

    emit()
    pump(settled(client, auth_headers, hook["id"], count=2))
    webhook = client.get(webhook_url, headers=auth_headers).json()
    assert webhook["is_active"] is False  # the limit is 2 in these tests
    assert "2 consecutive events" in webhook["disabled_reason"]
    failed = deliveries(client, auth_headers, hook["id"], status="failed")
    assert len(failed) == 2 and all(len(d["attempts"]) == 3 for d in failed)


def test_a_success_resets_the_exhausted_count(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    url = receiver.plan("patchy", status(500), status(500), status(500), ok(), status(500))
    hook = create_webhook(client, auth_headers, url)
    for count in (1, 2, 3):
        emit()
        pump(settled(client, auth_headers, hook["id"], count=count))
    webhook = client.get(f"/v1/webhook/{hook['id']}", headers=auth_headers).json()
    # exhausted, succeeded, exhausted: never two in a row.
    assert webhook["is_active"] is True
    states = [d["status"] for d in deliveries(client, auth_headers, hook["id"])]
    assert states == ["failed", "succeeded", "failed"]  # newest first


def test_inactive_webhooks_receive_nothing_and_reactivation_does_not_resend(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("off", ok()), is_active=False)
    emit(payload={"n": 1})
    pump(None, 0.5)
    assert receiver.received("off") == []
    assert deliveries(client, auth_headers, hook["id"]) == []

    reactivated = client.patch(
        f"/v1/webhook/{hook['id']}", json={"is_active": True}, headers=auth_headers
    )
    assert reactivated.json()["is_active"] is True
    new_event = emit(payload={"n": 2})
    pump(settled(client, auth_headers, hook["id"]))
    pump(None, 0.3)
    [got] = receiver.received("off")
    assert got.headers["webhook-id"] == new_event


def test_deactivating_cancels_pending_retries(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("pause", status(500)))
    emit()
    pump(lambda: len(receiver.received("pause")) >= 1)
    client.patch(f"/v1/webhook/{hook['id']}", json={"is_active": False}, headers=auth_headers)
    pump(None, 0.8)  # long enough for the two retries of the schedule
    assert len(receiver.received("pause")) == 1
    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "failed"
    assert delivery["failure_reason"] == "webhook inactive"


def test_deleting_cancels_pending_deliveries(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("bye", status(500)))
    emit()
    pump(lambda: len(receiver.received("bye")) >= 1)
    assert client.delete(f"/v1/webhook/{hook['id']}", headers=auth_headers).status_code == 204
    pump(None, 0.8)
    assert len(receiver.received("bye")) == 1


def test_replay_resends_the_same_event(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    url = receiver.plan("again", status(500), status(500), status(500), ok())
    hook = create_webhook(client, auth_headers, url)
    event_id = emit()
    pump(settled(client, auth_headers, hook["id"]))
    [failed] = deliveries(client, auth_headers, hook["id"])
    assert failed["status"] == "failed"

    response = client.post(
        f"/v1/webhook/{hook['id']}/deliveries/{failed['id']}/replay", headers=auth_headers
    )
    assert response.status_code == 202, response.text
    replay_id = response.json()["delivery_id"]
    pump(settled(client, auth_headers, hook["id"], count=2))

    got = receiver.received("again")
    assert len(got) == 4
    assert got[-1].headers["webhook-id"] == event_id
    assert got[-1].body == got[0].body
    newest, original = deliveries(client, auth_headers, hook["id"])
    assert newest["id"] == replay_id and newest["replay_of"] == failed["id"]
    assert newest["status"] == "succeeded" and original["status"] == "failed"
    assert [d["id"] for d in deliveries(client, auth_headers, hook["id"], status="failed")] == [
        failed["id"]
    ]


def test_test_event_goes_only_to_the_named_webhook(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    target = create_webhook(
        client, auth_headers, receiver.plan("t", ok()), event_types=["sync_job_run:*"]
    )
    bystander = create_webhook(client, auth_headers, receiver.plan("by", ok()))
    response = client.post("/v1/webhook/test", json={"id": target["id"]}, headers=auth_headers)
    assert response.status_code == 202, response.text
    delivery_id = response.json()["delivery_id"]
    pump(settled(client, auth_headers, target["id"]))
    pump(None, 0.3)

    [got] = receiver.received("t")
    envelope = Verifier(target["secret"]).verify(got.body, got.headers)
    assert envelope["event"] == "webhook:test"
    assert envelope["payload"]["webhook"]["id"] == target["id"]
    assert deliveries(client, auth_headers, target["id"])[0]["id"] == delivery_id
    assert receiver.received("by") == []
    assert deliveries(client, auth_headers, bystander["id"]) == []


def test_subscriptions_and_environments_select_the_events(
    client: TestClient,
    auth_headers: dict[str, str],
    make_token: Callable[..., str],
    receiver: Receiver,
    pump: Pump,
) -> None:
    staging = {"Authorization": f"Bearer {make_token('staging')}"}
    accounts = create_webhook(
        client, auth_headers, receiver.plan("acc", ok()), event_types=["integrated_account:*"]
    )
    completed = create_webhook(
        client, auth_headers, receiver.plan("done", ok()), event_types=["sync_job_run:completed"]
    )
    everything = create_webhook(client, auth_headers, receiver.plan("all", ok()))
    other_env = create_webhook(client, staging, receiver.plan("stg", ok()))
    created = emit("integrated_account:created")
    run_failed = emit("sync_job_run:failed")
    staged = emit("integrated_account:deleted", environment="staging")
    pump(
        lambda: (
            len(receiver.received("all")) == 2
            and len(receiver.received("acc")) == 1
            and len(receiver.received("stg")) == 1
        )
    )
    pump(None, 0.3)

    def ids(name: str) -> set[str]:
        return {r.headers["webhook-id"] for r in receiver.received(name)}

    assert ids("acc") == {created}
    assert ids("done") == set()
    assert ids("all") == {created, run_failed}
    assert ids("stg") == {staged}
    assert deliveries(client, auth_headers, completed["id"]) == []
    assert len(deliveries(client, staging, other_env["id"])) == 1
    assert len(deliveries(client, auth_headers, accounts["id"])) == 1
    assert len(deliveries(client, auth_headers, everything["id"])) == 2


def test_delivery_log_pages_newest_first(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("log", ok()))
    events = [emit(payload={"n": n}) for n in range(3)]
    pump(settled(client, auth_headers, hook["id"], count=3))
    url = f"/v1/webhook/{hook['id']}/deliveries"
    first = client.get(url, params={"limit": 2}, headers=auth_headers).json()
    second = client.get(
        url, params={"limit": 2, "next_cursor": first["next_cursor"]}, headers=auth_headers
    ).json()
    assert second["next_cursor"] is None
    seen = [d["event_id"] for d in first["result"] + second["result"]]
    assert seen == list(reversed(events))


def test_private_addresses_are_blocked_at_delivery(
    client: TestClient,
    auth_headers: dict[str, str],
    receiver: Receiver,
    pump: Pump,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    literal = create_webhook(client, auth_headers, receiver.plan("inside", ok()))
    by_name = receiver.plan("named", ok()).replace("127.0.0.1", "localhost")
    named = create_webhook(client, auth_headers, by_name)
    # The allow list is what let these loopback URLs in; without it, delivery must refuse
    # both the IP literal and the name that resolves to loopback.
    monkeypatch.setenv("SWITCHYARD_WEBHOOK_ALLOWED_HOSTS", "[]")
    get_settings.cache_clear()
    emit()
    pump(settled(client, auth_headers, literal["id"]))
    pump(settled(client, auth_headers, named["id"]))

    assert receiver.received("inside") == [] and receiver.received("named") == []
    for hook, host in ((literal, "127.0.0.1"), (named, "localhost")):
        [delivery] = deliveries(client, auth_headers, hook["id"])
        assert delivery["status"] == "failed"
        assert all(a["error"].startswith("blocked:") for a in delivery["attempts"])
        assert f"{host} " in delivery["attempts"][0]["error"]
        assert "non-public address" in delivery["attempts"][0]["error"]


def test_envelope_payload_is_the_recorded_resource(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("p", ok()))
    payload = {"id": "acct_9", "integration": {"name": "shopify"}, "note": "naïve ✓"}
    emit("integrated_account:updated", payload)
    pump(settled(client, auth_headers, hook["id"]))
    [got] = receiver.received("p")
    assert json.loads(got.body)["payload"] == payload


def test_events_of_rolled_back_transactions_are_never_sent(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("rb", ok()))
    settings = get_settings()
    with pytest.raises(RuntimeError), session_scope(settings) as session:
        record_event(
            session, environment_id="development", event_type="integrated_account:created",
            payload={"id": "acct_never"}, settings=settings,
        )  # fmt: skip
        raise RuntimeError("the change failed")
    committed = emit(payload={"id": "acct_kept"})
    pump(settled(client, auth_headers, hook["id"]))
    pump(None, 0.3)
    assert [r.headers["webhook-id"] for r in receiver.received("rb")] == [committed]


def test_one_delivery_per_event_and_webhook_even_if_dispatchers_race(
    client: TestClient, auth_headers: dict[str, str], receiver: Receiver, pump: Pump
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("once", ok()))
    emit()
    pump(settled(client, auth_headers, hook["id"]))
    [delivery] = deliveries(client, auth_headers, hook["id"])
    # A second dispatcher that read the event before it was marked dispatched would insert
    # the same (webhook, event) pair again: the database refuses it.
    with pytest.raises(IntegrityError), session_scope(get_settings()) as session:
        session.add(
            WebhookDelivery(
                id="wdl_duplicate",
                webhook_id=hook["id"],
                environment_id="development",
                event_id=delivery["event_id"],
                event_type=delivery["event_type"],
            )  # fmt: skip
        )
        session.flush()
