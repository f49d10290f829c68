"""OAuth accounts' access tokens are refreshed before they expire and once after a 401, one
refresher at a time (the sandbox rotates refresh tokens: a second refresh with a spent one
would fail), and a refused refresh flags the account ``needs_reauth`` with an event."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis
from fastapi import FastAPI
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.testclient import TestClient
from sqlmodel import col, select

from core.errors import ApiError
from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.integrations.catalog import get_catalog
from platform_api.services import accounts
from platform_api.services.oauth_client import request_tokens
from platform_api.services.oauth_refresh import LOCK_KEY
from platform_api.tables.common import isoformat, utcnow
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.outbox import OutboxEvent
from platform_api.unified import upstream
from sandbox import app as sandbox_app
from sandbox.oauth import OAuthServer
from switchyard.app import create_app
from tests.assertions import assert_error
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


def _authentication_errors() -> list[str]:
    with session_scope(get_settings()) as session:
        events = session.exec(
            select(OutboxEvent).where(
                col(OutboxEvent.event_type) == "integrated_account:authentication_error"
            )
        ).all()
    return [e.payload["id"] for e in events]


def _store_tokens(account_id: str, tokens: dict[str, Any]) -> None:
    """What a refresher stores once the provider answered."""
    settings = get_settings()
    expires_at = isoformat(utcnow() + timedelta(seconds=tokens["expires_in"])) or ""
    credentials = {"access_token": tokens["access_token"],
                   "refresh_token": tokens["refresh_token"], "expires_at": expires_at}  # fmt: skip
    with session_scope(settings) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        accounts.store_refreshed_credentials(
            session, account=account, credentials=credentials, settings=settings
        )


def test_the_refresh_lock_outlasts_the_longest_token_request_the_settings_allow(
    client: TestClient,
    auth_headers: dict[str, str],
    oauth: OAuthServer,
    redis_client: redis.Redis,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the token request is under way, no second refresher can take the lock for as
    long as that request may still go on: every attempt its connect and read timeouts, and
    the longest Retry-After waited out between attempts."""
    account_id, _ = _account(oauth, expires_in_s=10)
    retries = settings.upstream_max_retries
    longest_request_s = (retries + 1) * 2 * settings.upstream_timeout_s + (
        retries * settings.upstream_retry_max_sleep_s
    )
    lock_left_ms: list[int] = []
    rotate = oauth._rotate_refresh_token

    def noting_the_lock(form: dict[str, str]) -> JSONResponse:
        lock_left_ms.append(redis_client.pttl(LOCK_KEY.format(account_id)))
        return rotate(form)

    monkeypatch.setattr(oauth, "_rotate_refresh_token", noting_the_lock)
    assert _orders(client, auth_headers, account_id).status_code == 200
    assert len(lock_left_ms) == 1
    assert lock_left_ms[0] > longest_request_s * 1000


async def _request_tokens(settings: Settings, token_url: str) -> dict[str, str]:
    try:
        form = {"grant_type": "refresh_token", "refresh_token": "srt_x"}
        return await request_tokens(settings, get_catalog()["sandbox_oauth"], token_url, form)
    finally:
        await upstream.close_sessions()


def test_a_token_answer_that_never_ends_is_cut_off_at_the_deadline(settings: Settings) -> None:
    """Each chunk comes within the read timeout, so only a deadline on the whole request
    ends it (the refresh lock is sized on that deadline)."""
    provider = FastAPI()

    @provider.post("/oauth/token")
    async def dripping() -> StreamingResponse:
        async def drip() -> AsyncIterator[bytes]:
            for _ in range(200):  # ten seconds at most, far past the deadline below
                yield b" "
                await asyncio.sleep(0.05)

        return StreamingResponse(drip(), media_type="application/json")

    short = settings.model_copy(update={"upstream_timeout_s": 0.2, "upstream_max_retries": 0})
    with ServerThread(provider) as server, pytest.raises(ApiError) as excinfo:
        asyncio.run(_request_tokens(short, f"{server.url}/oauth/token"))
    assert (excinfo.value.status_code, excinfo.value.code) == (503, "PROVIDER_UNAVAILABLE")


def test_a_refresh_that_lost_the_race_uses_the_winners_token_instead_of_flagging(
    client: TestClient,
    auth_headers: dict[str, str],
    oauth: OAuthServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    account_id, _ = _account(oauth, expires_in_s=3600)
    oauth.expire_access_tokens()
    rotate = oauth._rotate_refresh_token

    def another_refresher_first(form: dict[str, str]) -> JSONResponse:
        # Another refresher sent the same refresh token a moment earlier and stored what it
        # got; ours arrives second and is refused (the token is spent).
        monkeypatch.setattr(oauth, "_rotate_refresh_token", rotate)
        _store_tokens(account_id, json.loads(bytes(rotate(form).body)))
        return rotate(form)

    monkeypatch.setattr(oauth, "_rotate_refresh_token", another_refresher_first)
    response = _orders(client, auth_headers, account_id)
    assert response.status_code == 200, response.text
    assert _stored(account_id)[1] == "active"
    assert _authentication_errors() == []


def test_a_provider_403_is_passed_on_without_a_refresh_or_a_flag(
    client: TestClient, auth_headers: dict[str, str], oauth: OAuthServer, sandbox: ServerThread
) -> None:
    async def forbidden() -> JSONResponse:
        error = {"code": "forbidden", "message": "this token may not read payouts"}
        return JSONResponse({"error": error}, status_code=403)

    sandbox.app.add_api_route("/store/payouts", forbidden, methods=["GET"])
    account_id, _ = _account(oauth, expires_in_s=3600)
    response = client.get(
        "/v1/proxy/store/payouts", params={"integrated_account_id": account_id},
        headers=auth_headers,
    )  # fmt: skip
    body = assert_error(response, 403, "INTEGRATION_FORBIDDEN")
    assert "may not read payouts" in body["message"]
    assert oauth.token_requests == []
    assert _stored(account_id)[1] == "active"
    assert _authentication_errors() == []
