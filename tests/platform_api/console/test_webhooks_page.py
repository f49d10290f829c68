"""The webhooks section: subscriptions (active, or disabled with the reason), a webhook's
delivery log with each attempt (paged), replaying a delivery (CSRF-checked, as the API's
replay does); and another environment's webhook is absent."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.tables.webhook import Webhook, WebhookAttempt, WebhookDelivery
from tests.platform_api.console.conftest import Clock, csrf_of
from tests.platform_api.webhooks.conftest import create_webhook, deliveries

pytestmark = pytest.mark.db

TARGET = "https://receiver.example/switchyard"


def _headers(make_token: Callable[..., str], environment: str = "development") -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(environment)}"}


def _test_delivery(client: TestClient, headers: dict[str, str], webhook_id: str) -> str:
    response = client.post("/v1/webhook/test", json={"id": webhook_id}, headers=headers)
    assert response.status_code == 202, response.text
    return response.json()["delivery_id"]


def _attempted(delivery_id: str, clock: Clock, *attempts: dict[str, Any]) -> None:
    """What the delivery workers record: the attempts, and the delivery failed after them."""
    with session_scope(get_settings()) as session:
        for number, fields in enumerate(attempts, start=1):
            started = clock.now - timedelta(minutes=10 - number)
            session.add(WebhookAttempt(
                id=new_id("watt"), delivery_id=delivery_id, number=number, started_at=started,
                finished_at=started + timedelta(seconds=1), **fields,
            ))  # fmt: skip
        delivery = session.get(WebhookDelivery, delivery_id)
        assert delivery is not None
        delivery.status, delivery.attempt_count = "failed", len(attempts)
        delivery.failure_reason = "retries exhausted"
        session.add(delivery)


def test_webhooks_are_listed_with_their_state(
    operator_client: TestClient, make_token: Callable[..., str]
) -> None:
    headers = _headers(make_token)
    active = create_webhook(operator_client, headers, TARGET, event_types=["sync_job_run:*"])
    disabled = create_webhook(operator_client, headers, "https://other.example/hooks")
    with session_scope(get_settings()) as session:
        row = session.get(Webhook, disabled["id"])
        assert row is not None
        row.is_active, row.disabled_reason = False, "disabled after 5 failed deliveries"
        session.add(row)
    page = operator_client.get("/console/development/webhooks")
    assert page.status_code == 200
    first = page.text[page.text.index(f'<tr id="{active["id"]}">') :].split("</tr>")[0]
    assert TARGET in first and "sync_job_run:*" in first and "status-active" in first
    second = page.text[page.text.index(f'<tr id="{disabled["id"]}">') :].split("</tr>")[0]
    assert "all events" in second and "status-disabled" in second
    assert "disabled after 5 failed deliveries" in second
    assert 'href="/console/development/webhooks" aria-current="page"' in page.text


def test_webhook_page_shows_deliveries_with_attempts(
    operator_client: TestClient, make_token: Callable[..., str], clock: Clock
) -> None:
    headers = _headers(make_token)
    webhook = create_webhook(operator_client, headers, TARGET)
    delivery = _test_delivery(operator_client, headers, webhook["id"])
    _attempted(
        delivery, clock,
        {"status_code": 503, "duration_ms": 120, "error": "HTTP 503"},
        {"status_code": None, "duration_ms": None, "error": "connection refused"},
    )  # fmt: skip
    page = operator_client.get(f"/console/development/webhooks/{webhook['id']}")
    assert page.status_code == 200
    row = page.text[page.text.index(f'<tr id="{delivery}">') :].split("</tr>")[0]
    assert "webhook:test" in row and 'class="status status-failed"' in row
    assert "retries exhausted" in row
    assert "HTTP 503" in row and "120 ms" in row and "connection refused" in row
    assert 'title="2026-11-27 08:51:00 UTC">9 min ago</time>' in row
    assert f"/deliveries/{delivery}/replay" in row


def test_deliveries_are_paged_newest_first(
    operator_client: TestClient, make_token: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from platform_api.console import webhooks as console_webhooks

    monkeypatch.setattr(console_webhooks, "DELIVERIES_PER_PAGE", 1)
    headers = _headers(make_token)
    webhook = create_webhook(operator_client, headers, TARGET)
    first = _test_delivery(operator_client, headers, webhook["id"])
    second = _test_delivery(operator_client, headers, webhook["id"])
    newest = operator_client.get(f"/console/development/webhooks/{webhook['id']}").text
    assert second in newest and first not in newest
    older = re.search(r'href="([^"]+\?after=[^"]+)">Older deliveries', newest)
    assert older, newest
    page_two = operator_client.get(older.group(1).replace("&amp;", "&")).text
    assert first in page_two and second not in page_two


def test_replay_queues_the_event_again(
    operator_client: TestClient, make_token: Callable[..., str], clock: Clock
) -> None:
    headers = _headers(make_token)
    webhook = create_webhook(operator_client, headers, TARGET)
    original = _test_delivery(operator_client, headers, webhook["id"])
    _attempted(original, clock, {"status_code": 500, "duration_ms": 80, "error": "HTTP 500"})
    page = operator_client.get(f"/console/development/webhooks/{webhook['id']}")
    response = operator_client.post(
        f"/console/development/webhooks/{webhook['id']}/deliveries/{original}/replay",
        data={"csrf_token": csrf_of(page)},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == (
        f"/console/development/webhooks/{webhook['id']}?notice=replayed"
    )
    log = deliveries(operator_client, headers, webhook["id"])
    assert [(d["replay_of"], d["status"]) for d in log] == [(original, "pending"), (None, "failed")]
    after = operator_client.get(response.headers["location"]).text
    assert "queued again" in after and f"replay of <code>{original}</code>" in after


def test_replay_of_an_inactive_webhook_is_refused(
    operator_client: TestClient, make_token: Callable[..., str]
) -> None:
    headers = _headers(make_token)
    webhook = create_webhook(operator_client, headers, TARGET)
    original = _test_delivery(operator_client, headers, webhook["id"])
    patched = operator_client.patch(
        f"/v1/webhook/{webhook['id']}", json={"is_active": False}, headers=headers
    )
    assert patched.status_code == 200
    page = operator_client.get(f"/console/development/webhooks/{webhook['id']}")
    assert "/replay" not in page.text and "cannot be replayed" in page.text
    response = operator_client.post(
        f"/console/development/webhooks/{webhook['id']}/deliveries/{original}/replay",
        data={"csrf_token": csrf_of(page)},
    )
    assert response.status_code == 409 and "inactive" in response.text
    assert len(deliveries(operator_client, headers, webhook["id"])) == 1


def test_replay_without_the_csrf_token_changes_nothing(
    operator_client: TestClient, make_token: Callable[..., str]
) -> None:
    headers = _headers(make_token)
    webhook = create_webhook(operator_client, headers, TARGET)
    original = _test_delivery(operator_client, headers, webhook["id"])
    for token in ("", "another-sessions-token"):
        response = operator_client.post(
            f"/console/development/webhooks/{webhook['id']}/deliveries/{original}/replay",
            data={"csrf_token": token},
        )
        assert response.status_code == 403
    assert len(deliveries(operator_client, headers, webhook["id"])) == 1


def test_another_environments_webhook_is_absent(
    operator_client: TestClient, make_token: Callable[..., str]
) -> None:
    staging = _headers(make_token, "staging")
    theirs = create_webhook(operator_client, staging, "https://staging.example/hooks")
    delivery = _test_delivery(operator_client, staging, theirs["id"])
    ours = create_webhook(operator_client, _headers(make_token), TARGET)
    listing = operator_client.get("/console/development/webhooks").text
    assert "staging.example" not in listing and theirs["id"] not in listing
    csrf = csrf_of(operator_client.get("/console/development/webhooks"))
    replay = f"/deliveries/{delivery}/replay"
    for method, path, data in [
        ("GET", "/console/staging/webhooks", None),
        ("GET", f"/console/staging/webhooks/{theirs['id']}", None),
        ("POST", f"/console/staging/webhooks/{theirs['id']}{replay}", {"csrf_token": csrf}),
        # Through one's own environment, or another's delivery under one's own webhook.
        ("GET", f"/console/development/webhooks/{theirs['id']}", None),
        ("POST", f"/console/development/webhooks/{theirs['id']}{replay}", {"csrf_token": csrf}),
        ("POST", f"/console/development/webhooks/{ours['id']}{replay}", {"csrf_token": csrf}),
    ]:
        response = operator_client.request(method, path, data=data)
        assert response.status_code == 404, (method, path, response.text)
        assert "<html" in response.text
    assert len(deliveries(operator_client, staging, theirs["id"])) == 1
