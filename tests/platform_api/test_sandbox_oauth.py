"""The sandbox's OAuth server behaves like a careful provider: codes go only to the redirect URI
registered for its client (the service's callback), and its consent form cannot be posted from
elsewhere (a one-time form token tied to the browser's cookie)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from core.settings import get_settings
from sandbox import app as sandbox_app
from sandbox.oauth import CLIENT_ID, s256


@pytest.fixture
def provider() -> Iterator[TestClient]:
    with TestClient(sandbox_app.create_app()) as client:
        yield client


def _registered() -> str:
    return get_settings().base_url + "/connect-account/oauth/callback"


def _query(redirect_uri: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": redirect_uri,
            "scope": "store.read", "state": "st-1", "code_challenge": s256("v" * 50),
            "code_challenge_method": "S256"}  # fmt: skip


def _form_token(page: httpx.Response) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert page.status_code == 200 and match, page.text
    return match.group(1)


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "https://evil.example/callback",
        "{registered}.evil.example",
        "{registered}/../../x",
        "{registered}?next=https://evil.example",
        "{base}/elsewhere",
    ],  # fmt: skip
)
def test_an_unregistered_redirect_uri_is_refused_not_followed(
    provider: TestClient, redirect_uri: str
) -> None:
    uri = redirect_uri.format(registered=_registered(), base=get_settings().base_url)
    page = provider.get("/oauth/authorize", params=_query(uri), follow_redirects=False)
    assert page.status_code == 400 and "location" not in page.headers
    assert "redirect_uri is not registered" in page.text


def test_the_registered_callback_gets_a_code_through_the_consent_form(
    provider: TestClient,
) -> None:
    page = provider.get("/oauth/authorize", params=_query(_registered()))
    # A redirect_uri posted with the form is not what counts: the request shown is.
    form = {"csrf_token": _form_token(page), "decision": "allow",
            "redirect_uri": "https://evil.example/callback"}  # fmt: skip
    answer = provider.post("/oauth/authorize", data=form, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    location = urlsplit(answer.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == _registered()
    back = parse_qs(location.query)
    assert back["state"] == ["st-1"] and back["code"]


def test_the_consent_form_needs_its_token_and_the_browser_it_was_shown_to(
    provider: TestClient,
) -> None:
    page = provider.get("/oauth/authorize", params=_query(_registered()))
    token = _form_token(page)
    # Without the token (a form posted by another site).
    forged = {"decision": "allow", **_query(_registered())}
    refused = provider.post("/oauth/authorize", data=forged, follow_redirects=False)
    assert refused.status_code == 400 and "location" not in refused.headers
    # With the token but from another browser (no consent cookie).
    with TestClient(provider.app) as elsewhere:
        stolen = {"csrf_token": token, "decision": "allow"}
        refused = elsewhere.post("/oauth/authorize", data=stolen, follow_redirects=False)
    assert refused.status_code == 400 and "location" not in refused.headers


def test_a_form_token_is_good_once(provider: TestClient) -> None:
    page = provider.get("/oauth/authorize", params=_query(_registered()))
    form = {"csrf_token": _form_token(page), "decision": "allow"}
    assert provider.post("/oauth/authorize", data=form, follow_redirects=False).status_code == 303
    again = provider.post("/oauth/authorize", data=form, follow_redirects=False)
    assert again.status_code == 400 and "location" not in again.headers
