"""Connecting checks before it stores: the token's integration only, each field's pattern,
and the integration's credential check against the provider (the sandbox, over loopback)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.crypto import encrypt_json
from platform_api.db import session_scope
from platform_api.tables.integrated_account import IntegratedAccount
from sandbox import app as sandbox_app
from switchyard.app import create_app
from tests.assertions import assert_error
from tests.conftest import ServerThread, free_port
from tests.platform_api.factories import install, link_token

pytestmark = pytest.mark.db

SESSION = "/connect-account/session"


@pytest.fixture
def sandbox_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with ServerThread(sandbox_app.create_app()) as sandbox:
        monkeypatch.setenv("SWITCHYARD_SANDBOX_URL", sandbox.url)
        get_settings.cache_clear()
        yield sandbox.url
    get_settings.cache_clear()


@pytest.fixture
def app(sandbox_url: str, db: None) -> FastAPI:
    return create_app(get_settings())


def _connect(
    client: TestClient, token: str, name: str, credentials: dict[str, str]
) -> httpx.Response:
    body = {"link_token": token, "integration_name": name, "credentials": credentials}
    return client.post(SESSION, json=body)


def _accounts(client: TestClient, headers: dict[str, str]) -> list[dict]:
    return client.get("/v1/integrated-account", headers=headers).json()["result"]


def test_a_key_the_provider_refuses_creates_nothing_and_keeps_the_token(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    install(client, auth_headers, "sandbox")
    token = link_token(client, auth_headers, tenant_id="t1")
    refused = _connect(client, token, "sandbox", {"api_key": "sk_sandbox_revoked"})
    assert "did not accept" in assert_error(refused, 400, "INVALID_CREDENTIALS")["message"]
    assert _accounts(client, auth_headers) == []
    accepted = _connect(client, token, "sandbox", {"api_key": sandbox_app.DEMO_KEY})
    assert accepted.status_code == 201, accepted.text  # the refusal did not spend the token
    assert [a["tenant_id"] for a in _accounts(client, auth_headers)] == ["t1"]


def test_a_provider_that_cannot_be_asked_is_503_and_creates_nothing(
    client: TestClient, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    install(client, auth_headers, "sandbox")
    token = link_token(client, auth_headers, tenant_id="t1")
    monkeypatch.setenv("SWITCHYARD_SANDBOX_URL", f"http://127.0.0.1:{free_port()}")
    get_settings.cache_clear()
    with TestClient(create_app(get_settings())) as down:
        response = _connect(down, token, "sandbox", {"api_key": sandbox_app.DEMO_KEY})
    assert_error(response, 503, "PROVIDER_UNAVAILABLE")
    assert int(response.headers["retry-after"]) > 0
    assert _accounts(client, auth_headers) == []


def test_a_token_for_one_integration_connects_no_other(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    install(client, auth_headers, "sandbox")
    install(client, auth_headers, "shopify")
    token = link_token(client, auth_headers, tenant_id="t1", integration_name="shopify")
    offered = client.get(SESSION, params={"link_token": token}).json()["integrations"]
    assert [i["name"] for i in offered] == ["shopify"]
    response = _connect(client, token, "sandbox", {"api_key": sandbox_app.DEMO_KEY})
    message = assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert "connects only shopify" in message
    assert _accounts(client, auth_headers) == []


@pytest.mark.parametrize("shop", ["Acme Store", "acme.evil.example", "-acme"])
def test_a_field_value_must_match_its_pattern(
    client: TestClient, auth_headers: dict[str, str], shop: str
) -> None:
    install(client, auth_headers, "shopify")
    token = link_token(client, auth_headers, tenant_id="t1")
    response = _connect(client, token, "shopify", {"shop": shop, "access_token": "shpat_x"})
    assert "credentials.shop" in assert_error(response, 400, "INVALID_REQUEST")["message"]


@pytest.mark.parametrize("value", ["shpat_x\r\nX-Injected: 1", "shpat_\x00x", "shpat_x\n"])
def test_a_credential_with_control_characters_is_400_and_creates_nothing(
    client: TestClient, auth_headers: dict[str, str], value: str
) -> None:
    install(client, auth_headers, "shopify")
    token = link_token(client, auth_headers, tenant_id="t1")
    response = _connect(client, token, "shopify", {"shop": "acme", "access_token": value})
    message = assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert "credentials.access_token" in message and "control characters" in message
    assert _accounts(client, auth_headers) == []


def test_stored_credentials_no_request_can_carry_answer_400_not_500(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    """Credentials that reached the database by another path (a hostile provider's token
    answer, an older release) fail each call with a clear error, not a 500."""
    install(client, auth_headers, "sandbox")
    token = link_token(client, auth_headers, tenant_id="t1")
    connected = _connect(client, token, "sandbox", {"api_key": sandbox_app.DEMO_KEY})
    account_id = connected.json()["integrated_account_id"]
    settings = get_settings()
    with session_scope(settings) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        bad = {"api_key": sandbox_app.DEMO_KEY + "\r\nX-Injected: 1"}
        account.credentials_encrypted = encrypt_json(bad, settings)
        session.add(account)
    response = client.get(
        "/v1/unified/wms/orders",
        params={"integrated_account_id": account_id},
        headers=auth_headers,
    )
    message = assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert "credentials.api_key" in message and "reconnect" in message
