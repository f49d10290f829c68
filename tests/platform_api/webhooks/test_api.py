"""The /v1/webhook management API: records, validation, event catalog, scoping, errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from standardwebhooks import Webhook as Verifier

from platform_api.event_types import EVENT_TYPES
from tests.assertions import assert_error
from tests.platform_api.webhooks.conftest import create_webhook

pytestmark = pytest.mark.db

HOOK = "https://hooks.example.com/switchyard"


def test_create_returns_secret_once(client: TestClient, auth_headers: dict[str, str]) -> None:
    created = create_webhook(client, auth_headers, HOOK, event_types=["integrated_account:*"])
    assert created["id"].startswith("whk_")
    assert created["target_url"] == HOOK
    assert created["is_active"] is True
    assert created["event_types"] == ["integrated_account:*"]
    assert created["environment_id"] == "development"
    assert created["created_at"] and created["updated_at"]
    assert created["secret"].startswith("whsec_")
    Verifier(created["secret"])  # a secret the reference library accepts

    fetched = client.get(f"/v1/webhook/{created['id']}", headers=auth_headers)
    assert fetched.status_code == 200
    assert "secret" not in fetched.json()
    listed = client.get("/v1/webhook", headers=auth_headers).json()
    assert listed["next_cursor"] is None
    assert [w["id"] for w in listed["result"]] == [created["id"]]
    assert "secret" not in listed["result"][0]


def test_create_defaults_to_all_events(client: TestClient, auth_headers: dict[str, str]) -> None:
    created = create_webhook(client, auth_headers, HOOK)
    assert created["event_types"] is None
    assert created["is_active"] is True


def test_patch_updates_any_field(client: TestClient, auth_headers: dict[str, str]) -> None:
    created = create_webhook(client, auth_headers, HOOK, event_types=["webhook:test"])
    response = client.patch(
        f"/v1/webhook/{created['id']}",
        json={"is_active": False, "target_url": HOOK + "/v2", "event_types": None},
        headers=auth_headers,
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["is_active"] is False
    assert updated["target_url"] == HOOK + "/v2"
    assert updated["event_types"] is None
    assert "secret" not in updated
    again = client.get(f"/v1/webhook/{created['id']}", headers=auth_headers).json()
    assert again == updated


def test_delete_removes_the_webhook(client: TestClient, auth_headers: dict[str, str]) -> None:
    created = create_webhook(client, auth_headers, HOOK)
    response = client.delete(f"/v1/webhook/{created['id']}", headers=auth_headers)
    assert response.status_code == 204
    assert response.content == b""
    missing = client.get(f"/v1/webhook/{created['id']}", headers=auth_headers)
    assert_error(missing, 404, "NOT_FOUND")
    assert_error(
        client.delete(f"/v1/webhook/{created['id']}", headers=auth_headers), 404, "NOT_FOUND"
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/x",  # plain http, host not allowed
        "hooks.example.com/x",  # not absolute
        "ftp://hooks.example.com/x",
        "https://127.0.0.2/x",  # loopback
        "https://10.1.2.3/x",  # private
        "https://169.254.169.254/latest/meta-data",  # cloud metadata
        "https://[::1]/x",
        "https://user:pw@hooks.example.com/x",
    ],
)
def test_create_rejects_unsafe_target_urls(
    client: TestClient, auth_headers: dict[str, str], url: str
) -> None:
    response = client.post("/v1/webhook", json={"target_url": url}, headers=auth_headers)
    assert "target_url" in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_http_is_allowed_for_listed_hosts(client: TestClient, auth_headers: dict[str, str]) -> None:
    created = create_webhook(client, auth_headers, "http://127.0.0.1:9/hook")
    assert created["target_url"] == "http://127.0.0.1:9/hook"


def test_unknown_event_types_list_the_valid_ones(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    response = client.post(
        "/v1/webhook",
        json={"target_url": HOOK, "event_types": ["integrated_account:created", "order:made"]},
        headers=auth_headers,
    )
    message = assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert "order:made" in message
    assert "integrated_account:created" in message and "sync_job_run:*" in message
    patch = client.patch(
        f"/v1/webhook/{create_webhook(client, auth_headers, HOOK)['id']}",
        json={"event_types": ["nothing:*"]},
        headers=auth_headers,
    )
    assert "nothing:*" in assert_error(patch, 400, "INVALID_REQUEST")["message"]


def test_malformed_bodies_are_400(client: TestClient, auth_headers: dict[str, str]) -> None:
    assert_error(client.post("/v1/webhook", json={}, headers=auth_headers), 400, "INVALID_REQUEST")
    extra = client.post(
        "/v1/webhook", json={"target_url": HOOK, "colour": "red"}, headers=auth_headers
    )
    assert "colour" in assert_error(extra, 400, "INVALID_REQUEST")["message"]
    created = create_webhook(client, auth_headers, HOOK)
    null_active = client.patch(
        f"/v1/webhook/{created['id']}", json={"is_active": None}, headers=auth_headers
    )
    assert_error(null_active, 400, "INVALID_REQUEST")


def test_event_types_are_listed_and_not_captured_by_id(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    response = client.get("/v1/webhook/event-types", headers=auth_headers)
    assert response.status_code == 200, response.text
    listed = {e["event_type"] for e in response.json()["result"]}
    assert listed == set(EVENT_TYPES)
    assert {"integrated_account:created", "sync_job_run:completed", "webhook:test"} <= listed


def test_webhooks_are_scoped_to_their_environment(
    client: TestClient, auth_headers: dict[str, str], make_token: Callable[..., str]
) -> None:
    created = create_webhook(client, auth_headers, HOOK)
    staging = {"Authorization": f"Bearer {make_token('staging')}"}
    assert_error(client.get(f"/v1/webhook/{created['id']}", headers=staging), 404, "NOT_FOUND")
    assert client.get("/v1/webhook", headers=staging).json()["result"] == []
    patch = client.patch(f"/v1/webhook/{created['id']}", json={"is_active": False}, headers=staging)
    assert_error(patch, 404, "NOT_FOUND")
    test = client.post("/v1/webhook/test", json={"id": created["id"]}, headers=staging)
    assert_error(test, 404, "NOT_FOUND")
    log = client.get(f"/v1/webhook/{created['id']}/deliveries", headers=staging)
    assert_error(log, 404, "NOT_FOUND")


def test_test_and_replay_need_an_active_webhook(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    assert_error(
        client.post("/v1/webhook/test", json={"id": "whk_missing"}, headers=auth_headers),
        404,
        "NOT_FOUND",
    )
    created = create_webhook(client, auth_headers, HOOK, is_active=False)
    test = client.post("/v1/webhook/test", json={"id": created["id"]}, headers=auth_headers)
    assert_error(test, 409, "CONFLICT")
    replay = client.post(
        f"/v1/webhook/{created['id']}/deliveries/wdl_missing/replay", headers=auth_headers
    )
    assert_error(replay, 404, "NOT_FOUND")


def test_delivery_log_rejects_unknown_status(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    created = create_webhook(client, auth_headers, HOOK)
    response = client.get(
        f"/v1/webhook/{created['id']}/deliveries", params={"status": "lost"}, headers=auth_headers
    )
    assert "status" in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_webhook_routes_require_a_token(client: TestClient) -> None:
    for method, path in [
        ("get", "/v1/webhook"),
        ("post", "/v1/webhook"),
        ("get", "/v1/webhook/event-types"),
        ("post", "/v1/webhook/test"),
    ]:
        assert_error(getattr(client, method)(path), 401, "UNAUTHORIZED")
