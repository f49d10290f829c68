"""Signing in and out: the session cookie, its expiry, CSRF on every form, the throttle."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.api.auth_throttle import AuthFailureThrottle
from platform_api.console.auth import console_now
from platform_api.db import session_scope
from platform_api.services.console_users import get_user
from platform_api.tables.common import utcnow
from switchyard.app import create_app
from tests.platform_api.console.conftest import PASSWORD, Clock, csrf_of, sign_in

pytestmark = pytest.mark.db


def test_console_without_a_session_goes_to_sign_in(client: TestClient) -> None:
    response = client.get("/console", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/console/sign-in"
    page = client.get("/console/sign-in")
    assert page.status_code == 200
    assert "<form" in page.text and 'name="csrf_token"' in page.text
    assert "script-src" not in page.headers["content-security-policy"]  # no script at all
    assert page.headers["cache-control"] == "no-store"


def test_sign_in_good_sets_a_strict_http_only_cookie(
    client: TestClient, clock: Clock, make_operator: Callable[..., str]
) -> None:
    response = sign_in(client, make_operator())
    assert response.status_code == 303
    assert response.headers["location"] == "/console"
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("sy_console="))
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert {"httponly", "path", "samesite", "max-age"} <= attributes
    assert "samesite=strict" in cookie.lower() and "path=/console" in cookie.lower()
    assert "secure" not in attributes  # plain http: a Secure cookie would never come back
    home = client.get("/console", follow_redirects=False)
    assert home.headers["location"] == "/console/development/tokens"
    tokens = client.get("/console/development/tokens")
    assert tokens.status_code == 200 and "ops" in tokens.text


def test_sign_in_over_https_sets_a_secure_cookie(
    app: FastAPI, clock: Clock, make_operator: Callable[..., str]
) -> None:
    with TestClient(app, base_url="https://testserver") as client:
        response = sign_in(client, make_operator())
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("sy_console="))
    assert "secure" in {part.strip().lower() for part in cookie.split(";")}


@pytest.mark.parametrize(
    ("username", "password"), [("ops", "wrong password!"), ("nobody", PASSWORD)]
)
def test_sign_in_bad_is_refused_without_a_session(
    client: TestClient, clock: Clock, make_operator: Callable[..., str], username: str,
    password: str,
) -> None:  # fmt: skip
    make_operator()
    response = sign_in(client, username, password)
    assert response.status_code == 401
    assert "Wrong username or password." in response.text
    assert "sy_console" not in client.cookies
    assert client.get("/console", follow_redirects=False).headers["location"] == (
        "/console/sign-in"
    )


def test_sign_in_of_a_disabled_operator_is_refused(
    client: TestClient, clock: Clock, make_operator: Callable[..., str]
) -> None:
    make_operator()
    with session_scope(get_settings()) as session:
        get_user(session, username="ops").disabled_at = utcnow()
    assert sign_in(client, "ops").status_code == 401


def test_sign_in_without_its_csrf_token_is_refused(
    client: TestClient, clock: Clock, make_operator: Callable[..., str]
) -> None:
    make_operator()
    client.get("/console/sign-in")
    response = client.post(
        "/console/sign-in", data={"username": "ops", "password": PASSWORD},
        follow_redirects=False,
    )  # fmt: skip
    assert response.status_code == 403
    assert "sy_console" not in client.cookies


def test_sign_out_ends_the_session(operator_client: TestClient) -> None:
    page = operator_client.get("/console/development/tokens")
    stolen = operator_client.cookies["sy_console"]
    response = operator_client.post(
        "/console/sign-out", data={"csrf_token": csrf_of(page)}, follow_redirects=False
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/console/sign-in"
    assert "sy_console" not in operator_client.cookies
    # The old cookie, replayed, names no session any more.
    operator_client.cookies.set("sy_console", stolen, path="/console")
    again = operator_client.get("/console/development/tokens", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == "/console/sign-in"


def test_expired_session_goes_to_sign_in(operator_client: TestClient, clock: Clock) -> None:
    lifetime = timedelta(hours=get_settings().console_session_hours)
    clock.advance(lifetime - timedelta(seconds=1))
    assert operator_client.get("/console/development/tokens").status_code == 200
    clock.advance(timedelta(seconds=1))
    response = operator_client.get("/console/development/tokens", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/console/sign-in"


@pytest.mark.parametrize("csrf_token", [None, "", "not-the-token"])
def test_post_without_the_session_csrf_token_is_refused(
    operator_client: TestClient, csrf_token: str | None
) -> None:
    data = (
        {"name": "forged"} if csrf_token is None else {"name": "forged", "csrf_token": csrf_token}
    )
    response = operator_client.post("/console/development/tokens", data=data)
    assert response.status_code == 403
    assert "did not come from the console" in response.text
    page = operator_client.get("/console/development/tokens")
    assert "forged" not in page.text
    signed_out = operator_client.post("/console/sign-out", data={"csrf_token": "nope"})
    assert signed_out.status_code == 403
    assert operator_client.get("/console/development/tokens").status_code == 200


def test_another_sessions_csrf_token_is_refused(
    app: FastAPI, operator_client: TestClient, make_operator: Callable[..., str]
) -> None:
    with TestClient(app) as other:
        assert sign_in(other, make_operator("second")).status_code == 303
        theirs = csrf_of(other.get("/console/development/tokens"))
    response = operator_client.post(
        "/console/development/tokens", data={"name": "x", "csrf_token": theirs}
    )
    assert response.status_code == 403


def test_failed_sign_ins_count_against_the_address_in_production(
    db: None, make_operator: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    monkeypatch.setenv("SWITCHYARD_MODE", "production")
    get_settings.cache_clear()
    app = create_app(get_settings())
    # A pinned clock: the throttle's window never turns over during the test.
    app.state.auth_throttle = AuthFailureThrottle(limit=2, clock=lambda: 1_000_000.0)
    clock = Clock()
    app.dependency_overrides[console_now] = lambda: clock.now
    make_operator()
    with TestClient(app) as client:
        assert sign_in(client, "ops", "wrong password!").status_code == 401
        assert sign_in(client, "ops", "wrong password!").status_code == 401
        refused = sign_in(client, "ops", "wrong password!")
        assert refused.status_code == 429
        assert "Retry-After" in refused.headers and "<html" in refused.text
        # Past the limit a good password is refused like a bad one.
        assert sign_in(client, "ops").status_code == 429
