"""The API tokens section: list, create (the secret shown once, working on /v1), revoke; and
an operator sees only their environments."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services.token_usage import LAST_USED_KEY, UsageRecorder
from platform_api.services.tokens import create_token
from tests.conftest import free_port
from tests.platform_api.console.conftest import Clock, csrf_of, sign_in
from tests.platform_api.factories import bearer

pytestmark = pytest.mark.db

PROBE = "/v1/integrated-account"
_SECRET = re.compile(r'<code class="secret" id="secret">(sy_[^<]+)</code>')
_TOKEN_ID = re.compile(r'<tr id="(tok_[^"]+)">')


def _create(client: TestClient, name: str, environment: str = "development") -> str:
    """Create a token through the page; returns its secret."""
    page = client.get(f"/console/{environment}/tokens")
    response = client.post(
        f"/console/{environment}/tokens", data={"name": name, "csrf_token": csrf_of(page)}
    )
    assert response.status_code == 201, response.text
    found = _SECRET.search(response.text)
    assert found, response.text
    return found.group(1)


def _token_in(environment: str, name: str) -> str:
    with session_scope(get_settings()) as session:
        token, _ = create_token(session, environment=environment, name=name)
        return token.id


def test_created_token_secret_is_shown_once_and_works_on_the_api(
    operator_client: TestClient,
) -> None:
    secret = _create(operator_client, "checkout service")
    assert operator_client.get(PROBE, headers=bearer(secret)).status_code == 200
    listing = operator_client.get("/console/development/tokens")
    assert "checkout service" in listing.text and secret[:10] in listing.text
    assert secret not in listing.text  # never again after the page that created it
    assert "active" in listing.text


def test_token_with_a_lifetime_and_a_bad_lifetime(operator_client: TestClient) -> None:
    page = operator_client.get("/console/development/tokens")
    bad = operator_client.post(
        "/console/development/tokens",
        data={"name": "x", "expires_in": "soon", "csrf_token": csrf_of(page)},
    )
    assert bad.status_code == 400 and "not a duration" in bad.text
    good = operator_client.post(
        "/console/development/tokens",
        data={"name": "short", "expires_in": "1d", "csrf_token": csrf_of(page)},
    )
    assert good.status_code == 201
    listing = operator_client.get("/console/development/tokens").text
    row = listing[listing.index("short") :].split("</tr>")[0]
    assert "never" not in row.split('<td class="last-used">')[0]  # expires: not never


def test_revoke_asks_first_then_the_token_stops_working(operator_client: TestClient) -> None:
    secret = _create(operator_client, "to revoke")
    listing = operator_client.get("/console/development/tokens")
    token_id = _TOKEN_ID.search(listing.text).group(1)  # type: ignore[union-attr]
    confirm = operator_client.get(f"/console/development/tokens/{token_id}/revoke")
    assert confirm.status_code == 200 and "Revoke to revoke?" in confirm.text
    assert operator_client.get(PROBE, headers=bearer(secret)).status_code == 200  # not yet
    response = operator_client.post(
        f"/console/development/tokens/{token_id}/revoke",
        data={"csrf_token": csrf_of(confirm)},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/console/development/tokens?notice=revoked"
    assert operator_client.get(PROBE, headers=bearer(secret)).status_code == 401
    after = operator_client.get(response.headers["location"])
    assert "stopped working at once" in after.text and "revoked 20" in after.text


def test_revoke_without_the_csrf_token_leaves_the_token_working(
    operator_client: TestClient,
) -> None:
    secret = _create(operator_client, "kept")
    token_id = _TOKEN_ID.search(operator_client.get("/console/development/tokens").text)
    assert token_id
    response = operator_client.post(
        f"/console/development/tokens/{token_id.group(1)}/revoke", data={"csrf_token": "x"}
    )
    assert response.status_code == 403
    assert operator_client.get(PROBE, headers=bearer(secret)).status_code == 200


def test_operator_sees_only_their_environments(operator_client: TestClient) -> None:
    ours = _token_in("development", "ours")
    theirs = _token_in("staging", "theirs")
    listing = operator_client.get("/console/development/tokens").text
    assert "ours" in listing and "theirs" not in listing and ours in listing
    assert "/console/staging/tokens" not in listing  # one environment: no switcher
    csrf = csrf_of(operator_client.get("/console/development/tokens"))
    for method, path, data in [
        ("GET", "/console/staging/tokens", None),
        ("POST", "/console/staging/tokens", {"name": "x", "csrf_token": csrf}),
        ("GET", "/console/production/tokens", None),
        ("GET", "/console/nowhere/tokens", None),
        ("GET", f"/console/staging/tokens/{theirs}/revoke", None),
        ("POST", f"/console/staging/tokens/{theirs}/revoke", {"csrf_token": csrf}),
        # Another environment's token through one's own environment: absent too.
        ("GET", f"/console/development/tokens/{theirs}/revoke", None),
        ("POST", f"/console/development/tokens/{theirs}/revoke", {"csrf_token": csrf}),
    ]:
        response = operator_client.request(method, path, data=data)
        assert response.status_code == 404, (method, path, response.text)
        assert "<html" in response.text
    with session_scope(get_settings()) as session:
        from platform_api.services.tokens import list_tokens

        staging = list_tokens(session, environment="staging")
    assert [(t.id, t.revoked_at) for t in staging] == [(theirs, None)]


def test_operator_of_two_environments_switches_between_them(
    app: FastAPI, clock: Clock, make_operator: Callable[..., str]
) -> None:
    _token_in("staging", "staging one")
    with TestClient(app) as client:
        assert sign_in(client, make_operator("both", ("development", "staging"))).status_code == 303
        development = client.get("/console/development/tokens").text
        assert 'href="/console/staging/tokens"' in development
        assert "staging one" not in development
        staging = client.get("/console/staging/tokens").text
        assert "staging one" in staging
        assert client.get("/console/production/tokens").status_code == 404


def test_stylesheet_is_served_from_the_package(client: TestClient) -> None:
    response = client.get("/console/assets/console.css")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")
    assert "http" not in response.text  # no external asset


def test_console_is_not_in_the_api_document(client: TestClient) -> None:
    assert not [p for p in client.get("/openapi.json").json()["paths"] if "console" in p]


def _last_used_cell(listing: str, token_id: str) -> str:
    row = listing[listing.index(f'<tr id="{token_id}">') :].split("</tr>")[0]
    found = re.search(r'<td class="last-used">(.*?)</td>', row)
    assert found, row
    return found.group(1)


def test_token_list_shows_when_each_token_was_last_used(
    operator_client: TestClient, clock: Clock, redis_client: redis.Redis
) -> None:
    used, unused = _token_in("development", "used"), _token_in("development", "unused")
    moment = clock.now - timedelta(minutes=3)
    redis_client.hset(LAST_USED_KEY, used, str(int(moment.timestamp())))
    listing = operator_client.get("/console/development/tokens").text
    assert "<th>Last used</th>" in listing
    cell = _last_used_cell(listing, used)
    assert "3 min ago" in cell and "2026-11-27 08:57:00 UTC" in cell
    assert _last_used_cell(listing, unused) == "never"


def test_a_request_shows_in_last_used_and_a_revoked_token_keeps_it(
    app: FastAPI, operator_client: TestClient, clock: Clock
) -> None:
    app.state.token_usage = UsageRecorder(clock=lambda: clock.now.timestamp())
    secret = _create(operator_client, "caller")
    listing = operator_client.get("/console/development/tokens").text
    token_id = _TOKEN_ID.search(listing).group(1)  # type: ignore[union-attr]
    assert _last_used_cell(listing, token_id) == "never"
    assert operator_client.get(PROBE, headers=bearer(secret)).status_code == 200
    listing = operator_client.get("/console/development/tokens").text
    assert "just now" in _last_used_cell(listing, token_id)
    clock.advance(timedelta(minutes=5))
    confirm = operator_client.get(f"/console/development/tokens/{token_id}/revoke")
    operator_client.post(
        f"/console/development/tokens/{token_id}/revoke", data={"csrf_token": csrf_of(confirm)}
    )
    listing = operator_client.get("/console/development/tokens").text
    assert "revoked 20" in listing and "5 min ago" in _last_used_cell(listing, token_id)


def test_token_list_shows_unknown_when_redis_is_down(
    app: FastAPI, operator_client: TestClient
) -> None:
    token_id = _token_in("development", "in the dark")
    # Nothing listens there: every Redis call is refused at once.
    app.state.redis = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0")
    response = operator_client.get("/console/development/tokens")
    assert response.status_code == 200
    assert _last_used_cell(response.text, token_id) == "unknown"
