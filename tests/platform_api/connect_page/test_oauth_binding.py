"""The OAuth connect flow is bound to the browser that started it, and the page learns its
outcome from a one-time result the server keeps, never from its own URL.

Each test drives the flow over HTTP: the service's start (a TestClient with its own cookie
jar is one browser), the sandbox's consent form (real HTTP to the sandbox), the callback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.services.connect_flow_oauth import binding_cookie_name
from switchyard.app import create_app
from tests.assertions import assert_error
from tests.platform_api.factories import install, link_token

pytestmark = pytest.mark.db

START = "/connect-account/oauth/start"
RESULT = "/connect-account/oauth/result"
OPENER = "https://app.example.com"


@pytest.fixture
def other_browser(app: FastAPI) -> Iterator[TestClient]:
    """A second browser: the same service, its own (empty) cookie jar."""
    with TestClient(app) as browser:
        yield browser


def _start(browser: TestClient, token: str) -> httpx.Response:
    params = {"link_token": token, "integration_name": "sandbox_oauth", "origin": OPENER}
    response = browser.get(START, params=params, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response


def _consent(authorize_url: str) -> str:
    """Allow at the sandbox's consent page; the callback's path and query it sends back to."""
    with httpx.Client() as provider_tab:
        page = provider_tab.get(authorize_url)
        match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert page.status_code == 200 and match, page.text
        form = {"csrf_token": match.group(1), "decision": "allow"}
        answer = provider_tab.post(authorize_url.split("?")[0], data=form)
    assert answer.status_code == 303, answer.text
    back = urlsplit(answer.headers["location"])
    return f"{back.path}?{back.query}"


def _state(callback: str) -> str:
    return parse_qs(urlsplit(callback).query)["state"][0]


def _callback(browser: TestClient, callback: str) -> tuple[str, httpx.Response]:
    """The result id the callback hands the page, and the callback's response."""
    response = browser.get(callback, follow_redirects=False)
    assert response.status_code == 303, response.text
    location = urlsplit(response.headers["location"])
    assert location.path == "/connect-account"
    [result_id] = parse_qs(location.query)["oauth_result"]
    return result_id, response


def _redeem(browser: TestClient, result_id: str) -> dict:
    response = browser.post(RESULT, json={"result_id": result_id})
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    return response.json()


def _accounts(client: TestClient, headers: dict[str, str]) -> list[dict]:
    return client.get("/v1/integrated-account", headers=headers).json()["result"]


def test_the_start_sets_a_short_lived_cookie_on_the_callback_path(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    install(client, auth_headers, "sandbox_oauth")
    response = _start(client, link_token(client, auth_headers, tenant_id="acme"))
    cookie = response.headers["set-cookie"]
    state = parse_qs(urlsplit(response.headers["location"]).query)["state"][0]
    assert cookie.startswith(binding_cookie_name(state) + "=")
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=lax", "path=/connect-account/oauth/callback",
            "max-age=600"} <= attributes  # fmt: skip
    assert "secure" not in attributes  # the base URL is http here


def test_the_cookie_is_secure_when_the_public_base_url_is_https(
    auth_headers: dict[str, str], client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(client, auth_headers, "sandbox_oauth")
    token = link_token(client, auth_headers, tenant_id="acme")
    monkeypatch.setenv("SWITCHYARD_PUBLIC_BASE_URL", "https://switchyard.example.com")
    get_settings.cache_clear()
    with TestClient(create_app(get_settings())) as https_browser:
        cookie = _start(https_browser, token).headers["set-cookie"]
    assert "secure" in {part.strip().lower() for part in cookie.split(";")}


def test_a_callback_without_the_starting_browsers_cookie_connects_nothing(
    client: TestClient, other_browser: TestClient, auth_headers: dict[str, str]
) -> None:
    install(client, auth_headers, "sandbox_oauth")
    started = _start(client, link_token(client, auth_headers, tenant_id="acme"))
    callback = _consent(started.headers["location"])

    result_id, _ = _callback(other_browser, callback)
    refused = _redeem(other_browser, result_id)
    assert refused["outcome"] == "failed" and "another browser" in refused["message"]
    assert refused["origin"] is None  # nobody else's opener is told anything
    assert _accounts(client, auth_headers) == []

    # The browser that started it still can: the refusal did not spend the state.
    result_id, response = _callback(client, callback)
    connected = _redeem(client, result_id)
    [account] = _accounts(client, auth_headers)
    assert connected == {"outcome": "connected", "integrated_account_id": account["id"],
                         "integration": {"name": "sandbox_oauth",
                                         "label": "Sandbox WMS (OAuth)"},
                         "origin": OPENER}  # fmt: skip
    assert account["tenant_id"] == "acme"
    # The binding cookie is cleared.
    cleared = response.headers["set-cookie"]
    assert cleared.startswith(binding_cookie_name(_state(callback)) + '=""')
    assert "max-age=0" in cleared.lower()


def test_another_browsers_cookie_does_not_complete_the_flow(
    client: TestClient, other_browser: TestClient, auth_headers: dict[str, str]
) -> None:
    install(client, auth_headers, "sandbox_oauth")
    mine = _start(client, link_token(client, auth_headers, tenant_id="acme"))
    theirs = _start(other_browser, link_token(client, auth_headers, tenant_id="evil"))
    their_callback = _consent(theirs.headers["location"])
    # My browser holds a binding of its own; put it under the name their state looks for.
    [my_binding] = [value for name, value in client.cookies.items()
                    if name.startswith("switchyard_oauth_")]  # fmt: skip
    assert mine.headers["set-cookie"].split(";")[0].endswith(my_binding)
    client.cookies.clear()
    client.cookies.set(binding_cookie_name(_state(their_callback)), my_binding)

    result_id, _ = _callback(client, their_callback)
    assert _redeem(client, result_id)["outcome"] == "failed"
    assert _accounts(client, auth_headers) == []


def test_a_result_is_redeemed_once_and_a_forged_one_never(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    install(client, auth_headers, "sandbox_oauth")
    started = _start(client, link_token(client, auth_headers, tenant_id="acme"))
    result_id, _ = _callback(client, _consent(started.headers["location"]))
    assert _redeem(client, result_id)["outcome"] == "connected"
    assert_error(client.post(RESULT, json={"result_id": result_id}), 400, "OAUTH_RESULT_INVALID")
    for forged in ("connected", "acct_0123456789", ""):
        assert_error(client.post(RESULT, json={"result_id": forged}), 400, "OAUTH_RESULT_INVALID")


def test_an_unknown_state_is_a_failed_result_for_nobody(client: TestClient) -> None:
    result_id, _ = _callback(client, "/connect-account/oauth/callback?state=made-up&code=x")
    refused = _redeem(client, result_id)
    assert refused["outcome"] == "failed" and refused["origin"] is None
    assert "expired or was already used" in refused["message"]
