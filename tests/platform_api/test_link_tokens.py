"""Link tokens and the connect-account session endpoints: issuing, expiry, single use,
credential checks, account creation and reauthorization."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import select

from core.settings import Settings, get_settings
from platform_api.db import get_engine, session_scope
from platform_api.services import accounts
from platform_api.services.tokens import create_token
from platform_api.tables.common import utcnow
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.link_token import LinkToken
from platform_api.tables.outbox import OutboxEvent
from switchyard.app import create_app
from tests.assertions import assert_error
from tests.platform_api.factories import (
    SHOPIFY_CREDENTIALS,
    bearer,
    connect,
    install,
    link_token,
    run_together,
)

pytestmark = pytest.mark.db

SESSION = "/connect-account/session"


@pytest.fixture
def shopify(client: TestClient, auth_headers: dict[str, str]) -> dict:
    return install(client, auth_headers, "shopify")


def _post_session(
    client: TestClient,
    token: str,
    name: str = "shopify",
    credentials: dict[str, Any] | None = None,
) -> httpx.Response:
    body = {"link_token": token, "integration_name": name, "credentials": credentials}
    if credentials is None:
        body["credentials"] = SHOPIFY_CREDENTIALS
    return client.post(SESSION, json=body)


def _events(event_type: str) -> list[OutboxEvent]:
    with session_scope(get_settings()) as session:
        statement = select(OutboxEvent).where(OutboxEvent.event_type == event_type)
        return list(session.exec(statement.order_by(OutboxEvent.id)).all())


def test_link_token_is_returned_once_and_stored_only_as_a_hash(
    client: TestClient, auth_headers: dict[str, str], shopify: dict, settings: Settings
) -> None:
    before = utcnow()
    response = client.post("/v1/link-token", json={"tenant_id": "t1"}, headers=auth_headers)
    assert response.status_code == 201
    body = response.json()
    assert body["link_token"].startswith("lt_") and len(body["link_token"]) > 40
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    ttl = timedelta(seconds=settings.link_token_ttl_seconds)
    assert before + ttl - timedelta(seconds=5) <= expires <= utcnow() + ttl
    assert body["link_url"].endswith(f"/connect-account?link_token={body['link_token']}")
    with get_engine(get_settings()).connect() as connection:
        rows = connection.execute(sa.text("SELECT * FROM link_token")).mappings().all()
    assert len(rows) == 1
    assert all(body["link_token"] not in str(value) for value in rows[0].values())


def test_link_token_lifetime_comes_from_settings(settings: Settings, db: None) -> None:
    short = settings.model_copy(update={"link_token_ttl_seconds": 600})
    with TestClient(create_app(short)) as client:
        with session_scope(get_settings()) as session:
            _, secret = create_token(session, environment="development")
        before = utcnow()
        body = client.post("/v1/link-token", json={"tenant_id": "t"}, headers=bearer(secret)).json()
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert before + timedelta(seconds=595) <= expires <= utcnow() + timedelta(seconds=600)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"tenant_id": "t1", "integrated_account_id": "acct_x"},
        {"tenant_id": ""},
        {"tenant_id": "t1", "integration_name": "hubspot"},  # not installed
        {"tenant_id": "t1", "integration_name": "no_such_integration"},
        {"tenant_id": "t1", "colour": "red"},
    ],
    ids=["neither", "both", "empty-tenant", "not-installed", "unknown-integration", "extra-field"],
)
def test_link_token_rejects_bad_requests(
    client: TestClient, auth_headers: dict[str, str], shopify: dict, body: dict
) -> None:
    response = client.post("/v1/link-token", json=body, headers=auth_headers)
    assert_error(response, 400, "INVALID_REQUEST")


def test_link_token_for_another_environments_account_is_not_found(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    production = bearer(make_token("production"))
    install(client, production, "shopify")
    account_id = connect(client, production)
    staging = bearer(make_token("staging"))
    for account in (account_id, "acct_does_not_exist"):
        response = client.post(
            "/v1/link-token", json={"integrated_account_id": account}, headers=staging
        )
        assert_error(response, 404, "NOT_FOUND")


def test_link_token_requires_an_api_token(client: TestClient) -> None:
    assert_error(client.post("/v1/link-token", json={"tenant_id": "t"}), 401, "UNAUTHORIZED")


def test_session_describes_offered_integrations_and_their_fields(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    hubspot = install(client, auth_headers, "hubspot")
    client.patch(
        f"/v1/environment-integration/{hubspot['id']}",
        json={"override": {"oauth": {"client_id": "my-app", "client_secret": "cs-123"}}},
        headers=auth_headers,
    )
    token = link_token(client, auth_headers, tenant_id="t1", integration_name="shopify")
    response = client.get(SESSION, params={"link_token": token})
    assert response.status_code == 200
    body = response.json()
    assert body["tenant_id"] == "t1"
    assert body["mode"] == "connect"
    assert body["preselected_integration"] == "shopify"
    # A token made for one integration offers that one only.
    assert [i["name"] for i in body["integrations"]] == ["shopify"]
    fields = body["integrations"][0]["auth"]["fields"]
    assert [(f["name"], f["secret"]) for f in fields] == [("shop", False), ("access_token", True)]
    assert fields[0]["pattern"] == "^[a-z0-9][a-z0-9-]*$"  # the page checks it as typed
    any_token = link_token(client, auth_headers, tenant_id="t1")
    offered = {
        i["name"]: i
        for i in client.get(SESSION, params={"link_token": any_token}).json()["integrations"]
    }
    assert set(offered) == {"shopify", "hubspot"}
    oauth = offered["hubspot"]["auth"]["oauth2"]
    assert oauth["client_id"] == "my-app"
    assert oauth["authorize_url"].startswith("https://")
    assert "oauth" in oauth["scopes"]
    assert "cs-123" not in response.text
    # Describing the session does not spend the token.
    assert client.get(SESSION, params={"link_token": token}).status_code == 200


def test_session_needs_a_valid_link_token(client: TestClient, shopify: dict) -> None:
    assert_error(client.get(SESSION, params={"link_token": "lt_forged"}), 401, "LINK_TOKEN_INVALID")
    assert_error(client.get(SESSION), 400, "INVALID_REQUEST")
    assert_error(_post_session(client, "lt_forged"), 401, "LINK_TOKEN_INVALID")


def test_connecting_creates_an_account_and_records_the_event(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    token = link_token(client, auth_headers, tenant_id="tenant-42")
    response = _post_session(client, token)
    assert response.status_code == 201
    body = response.json()
    assert body["tenant_id"] == "tenant-42"
    assert body["integration"] == {"name": "shopify", "label": "Shopify", "category": "wms"}
    account = client.get(
        f"/v1/integrated-account/{body['integrated_account_id']}", headers=auth_headers
    ).json()
    assert account["status"] == "active" and account["tenant_id"] == "tenant-42"
    [event] = _events("integrated_account:created")
    assert event.environment_id == "development"
    assert event.payload == account


def test_credentials_are_encrypted_at_rest_and_never_shown(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    secret = SHOPIFY_CREDENTIALS["access_token"]
    token = link_token(client, auth_headers, tenant_id="t1")
    response = _post_session(client, token)
    account_id = response.json()["integrated_account_id"]
    shown = [
        response.text,
        client.get(f"/v1/integrated-account/{account_id}", headers=auth_headers).text,
        client.get("/v1/integrated-account", headers=auth_headers).text,
    ]
    assert all(secret not in text for text in shown)
    with get_engine(get_settings()).connect() as connection:
        raw = connection.execute(sa.text("SELECT * FROM integrated_account")).mappings().one()
    assert all(secret not in str(value) for value in raw.values())
    with session_scope(get_settings()) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        stored = accounts.get_credentials(account, get_settings())
    assert stored == SHOPIFY_CREDENTIALS
    assert all(secret not in str(event.payload) for event in _events("integrated_account:created"))


def test_missing_credential_fields_are_named_and_the_token_survives(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    token = link_token(client, auth_headers, tenant_id="t1")
    body = assert_error(_post_session(client, token, credentials={}), 400, "INVALID_REQUEST")
    assert "shop" in body["message"] and "access_token" in body["message"]
    blank = _post_session(client, token, credentials={"shop": "acme", "access_token": " "})
    assert "access_token" in assert_error(blank, 400, "INVALID_REQUEST")["message"]
    unknown = _post_session(client, token, credentials={**SHOPIFY_CREDENTIALS, "pin": "1"})
    assert "pin" in assert_error(unknown, 400, "INVALID_REQUEST")["message"]
    not_installed = _post_session(client, token, name="hubspot", credentials={"access_token": "x"})
    assert_error(not_installed, 400, "INVALID_REQUEST")
    assert _post_session(client, token).status_code == 201


def test_link_token_is_single_use(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    token = link_token(client, auth_headers, tenant_id="t1")
    assert _post_session(client, token).status_code == 201
    assert_error(_post_session(client, token), 401, "LINK_TOKEN_INVALID")
    assert_error(client.get(SESSION, params={"link_token": token}), 401, "LINK_TOKEN_INVALID")
    assert len(client.get("/v1/integrated-account", headers=auth_headers).json()["result"]) == 1


def test_expired_link_token_is_refused(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    token = link_token(client, auth_headers, tenant_id="t1")
    with session_scope(get_settings()) as session:
        row = session.exec(select(LinkToken)).one()
        row.expires_at = utcnow() - timedelta(seconds=1)
        session.add(row)
    assert_error(client.get(SESSION, params={"link_token": token}), 401, "LINK_TOKEN_INVALID")
    assert_error(_post_session(client, token), 401, "LINK_TOKEN_INVALID")
    assert client.get("/v1/integrated-account", headers=auth_headers).json()["result"] == []


@pytest.fixture
def http_client(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=30) as http:
        yield http


def _redeem_twice_at_once(http: httpx.Client, token: str) -> list[int]:
    """Two connect attempts with the same token, released together; their statuses."""
    body = {"link_token": token, "integration_name": "shopify", "credentials": SHOPIFY_CREDENTIALS}
    return sorted(run_together(lambda: http.post(SESSION, json=body).status_code))


def test_concurrent_redemptions_of_one_token_create_one_account(
    http_client: httpx.Client, make_token: Callable[..., str]
) -> None:
    headers = bearer(make_token("development"))
    installed = http_client.post(
        "/v1/environment-integration", json={"integration_name": "shopify"}, headers=headers
    )
    assert installed.status_code == 201
    rounds = 5
    for number in range(rounds):
        token = http_client.post(
            "/v1/link-token", json={"tenant_id": f"t{number}"}, headers=headers
        ).json()["link_token"]
        assert _redeem_twice_at_once(http_client, token) == [201, 401]
    listed = http_client.get("/v1/integrated-account", headers=headers).json()["result"]
    assert sorted(a["tenant_id"] for a in listed) == [f"t{i}" for i in range(rounds)]


def test_reauthorization_replaces_credentials_and_reactivates(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    account_id = connect(client, auth_headers, tenant_id="t9")
    settings = get_settings()
    with session_scope(settings) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        accounts.mark_needs_reauth(session, account, settings=settings)
    [flagged] = _events("integrated_account:authentication_error")
    assert flagged.payload["id"] == account_id and flagged.payload["status"] == "needs_reauth"
    url = f"/v1/integrated-account/{account_id}"
    assert client.get(url, headers=auth_headers).json()["status"] == "needs_reauth"

    token = link_token(client, auth_headers, integrated_account_id=account_id)
    described = client.get(SESSION, params={"link_token": token}).json()
    assert described["mode"] == "reauthorize"
    assert described["integrated_account_id"] == account_id
    assert described["tenant_id"] == "t9"
    assert [i["name"] for i in described["integrations"]] == ["shopify"]

    install(client, auth_headers, "pipedrive")
    wrong = _post_session(client, token, name="pipedrive", credentials={"api_token": "x"})
    assert_error(wrong, 400, "INVALID_REQUEST")
    fresh = {"shop": "acme", "access_token": "shpat_rotated"}
    response = _post_session(client, token, credentials=fresh)
    assert response.status_code == 200
    assert response.json()["integrated_account_id"] == account_id
    record = client.get(url, headers=auth_headers).json()
    assert record["status"] == "active"
    with session_scope(get_settings()) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        assert accounts.get_credentials(account, get_settings()) == fresh
    [updated] = _events("integrated_account:updated")
    assert updated.payload == record
    assert len(client.get("/v1/integrated-account", headers=auth_headers).json()["result"]) == 1
    assert_error(_post_session(client, token, credentials=fresh), 401, "LINK_TOKEN_INVALID")


def test_credential_values_must_be_strings(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    token = link_token(client, auth_headers, tenant_id="t1")
    response = _post_session(client, token, credentials={"shop": "acme", "access_token": 123})
    assert "credentials.access_token" in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_credentials_never_reach_a_log_line(
    client: TestClient,
    auth_headers: dict[str, str],
    shopify: dict,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    token = link_token(client, auth_headers, tenant_id="t1")
    account_id = _post_session(client, token).json()["integrated_account_id"]
    bad = _post_session(client, token, credentials={"shop": "x", "access_token": "tok_in_bad_call"})
    assert bad.status_code == 401
    client.get(f"/v1/integrated-account/{account_id}", headers=auth_headers)
    assert "http_request" in caplog.text, "the request logs were not captured"
    assert SHOPIFY_CREDENTIALS["access_token"] not in caplog.text
    assert "tok_in_bad_call" not in caplog.text
    assert token not in caplog.text
