"""OAuth accounts' access tokens are refreshed before they expire and once after a 401, one
refresher at a time (the sandbox rotates refresh tokens: a second refresh with a spent one
would fail), and a refused refresh flags the account ``needs_reauth`` with an event."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlmodel import col, select

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services import accounts
from platform_api.tables.common import isoformat, utcnow
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.outbox import OutboxEvent
from sandbox import app as sandbox_app
from sandbox.oauth import OAuthServer
from switchyard.app import create_app
from tests.conftest import ServerThread
from tests.platform_api.unified.helpers import make_account

pytestmark = pytest.mark.db


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerThread]:
    with ServerThread(sandbox_app.create_app()) as server:
        monkeypatch.setenv("SWITCHYARD_SANDBOX_URL", server.url)
        get_settings.cache_clear()
        yield server
    get_settings.cache_clear()


@pytest.fixture
def oauth(sandbox: ServerThread) -> OAuthServer:
    server: OAuthServer = sandbox.app.state.oauth
    return server


@pytest.fixture
def app(sandbox: ServerThread, db: None) -> FastAPI:
    return create_app(get_settings())


def _account(oauth: OAuthServer, expires_in_s: float) -> tuple[str, dict[str, Any]]:
    tokens = oauth.issue()
    expires_at = isoformat(utcnow() + timedelta(seconds=expires_in_s)) or ""
    credentials = {"access_token": tokens["access_token"],
                   "refresh_token": tokens["refresh_token"], "expires_at": expires_at}  # fmt: skip
    return make_account("sandbox_oauth", credentials, base_url=None), tokens


def _stored(account_id: str) -> tuple[dict[str, Any], str]:
    settings = get_settings()
    with session_scope(settings) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        return accounts.get_credentials(account, settings), account.status


def _orders(
    client: TestClient | httpx.Client, headers: dict[str, str], account_id: str
) -> httpx.Response:
    params: dict[str, str | int] = {"integrated_account_id": account_id, "limit": 2}
    return client.get("/v1/unified/wms/orders", params=params, headers=headers)


def test_a_token_about_to_expire_is_refreshed_before_the_call(
    client: TestClient, auth_headers: dict[str, str], oauth: OAuthServer
) -> None:
    account_id, first = _account(oauth, expires_in_s=10)  # inside the refresh margin
    assert _orders(client, auth_headers, account_id).status_code == 200
    assert oauth.token_requests == ["refresh_token"]
    stored, status = _stored(account_id)
    assert stored["access_token"] != first["access_token"] and status == "active"
    assert stored["refresh_token"] != first["refresh_token"]  # rotated, and kept
    assert not oauth.refresh[first["refresh_token"]]
    assert _orders(client, auth_headers, account_id).status_code == 200
    assert oauth.token_requests == ["refresh_token"]  # the fresh token is used as it is


def test_a_401_refreshes_once_and_the_call_goes_through(
    client: TestClient, auth_headers: dict[str, str], oauth: OAuthServer
) -> None:
    account_id, _ = _account(oauth, expires_in_s=3600)
    assert _orders(client, auth_headers, account_id).status_code == 200
    oauth.expire_access_tokens()  # the provider ended the token early
    response = _orders(client, auth_headers, account_id)
    assert response.status_code == 200, response.text
    assert oauth.token_requests == ["refresh_token"]
    assert _stored(account_id)[1] == "active"


def test_two_callers_hitting_an_expired_token_refresh_it_once(
    app: FastAPI, auth_headers: dict[str, str], oauth: OAuthServer
) -> None:
    account_id, _ = _account(oauth, expires_in_s=3600)
    oauth.expire_access_tokens()
    oauth.token_delay_s = 0.5  # the second caller's 401 comes while the first refreshes
    statuses: list[int] = []
    barrier = threading.Barrier(2)
    with ServerThread(app) as front:

        def caller() -> None:
            with httpx.Client(base_url=front.url, timeout=30) as http:
                barrier.wait()
                statuses.append(_orders(http, auth_headers, account_id).status_code)

        threads = [threading.Thread(target=caller) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert statuses == [200, 200]
    assert oauth.token_requests == ["refresh_token"]  # the second waited and used the new one
    assert _stored(account_id)[1] == "active"


def test_a_refused_refresh_flags_the_account_and_tells_webhooks(
    client: TestClient, auth_headers: dict[str, str], oauth: OAuthServer
) -> None:
    account_id, tokens = _account(oauth, expires_in_s=3600)
    oauth.refresh[tokens["refresh_token"]] = False  # revoked at the provider
    oauth.expire_access_tokens()
    response = _orders(client, auth_headers, account_id)
    assert response.status_code == 401 and response.json()["error"] == "INTEGRATION_UNAUTHORIZED"
    assert "reconnect" in response.json()["message"]
    assert _stored(account_id)[1] == "needs_reauth"
    with session_scope(get_settings()) as session:
        events = session.exec(
            select(OutboxEvent).where(
                col(OutboxEvent.event_type) == "integrated_account:authentication_error"
            )
        ).all()
    assert [e.payload["id"] for e in events] == [account_id]  # once
