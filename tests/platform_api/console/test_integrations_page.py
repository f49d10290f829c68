"""The integrations section: the catalog with this environment's installations; install,
enable/disable; the override edited as JSON (client secret masked as the API masks it, invalid
JSON and refused values shown with a 400); CSRF and another environment's installs refused."""

from __future__ import annotations

import html
import json
import re

import pytest
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services.installed_integrations import (
    MASK,
    find_installed,
    get_override,
    install,
)
from tests.platform_api.console.conftest import csrf_of

pytestmark = pytest.mark.db

LIST = "/console/development/integrations"
CLIENT_SECRET = "cs_very_secret_value"
_TEXTAREA = re.compile(r'<textarea name="override"[^>]*>(.*?)</textarea>', re.S)


def _row(page: str, name: str) -> str:
    return page[page.index(f'<tr id="integration-{name}">') :].split("</tr>")[0]


def _installed(name: str, environment: str = "development") -> tuple[str, bool, dict] | None:
    with session_scope(get_settings()) as session:
        row = find_installed(session, environment_id=environment, integration_name=name)
        if row is None:
            return None
        return row.id, row.is_enabled, get_override(row, get_settings())


def _install(name: str, environment: str = "development") -> str:
    with session_scope(get_settings()) as session:
        return install(session, environment_id=environment, integration_name=name).id


def test_catalog_lists_every_integration_with_category_and_auth(
    operator_client: TestClient,
) -> None:
    page = operator_client.get(LIST)
    assert page.status_code == 200
    hubspot = _row(page.text, "hubspot")
    assert "crm" in hubspot and "oauth2" in hubspot and "not installed" in hubspot
    shopify = _row(page.text, "shopify")
    assert "wms" in shopify and "api_key" in shopify
    assert 'aria-current="page">Integrations</a>' in page.text


def test_install_then_disable_and_enable(operator_client: TestClient) -> None:
    page = operator_client.get(LIST)
    response = operator_client.post(
        LIST, data={"integration_name": "shopify", "csrf_token": csrf_of(page)},
        follow_redirects=False,
    )  # fmt: skip
    assert response.status_code == 303
    installed = _installed("shopify")
    assert installed and installed[1] is True
    listing = operator_client.get(response.headers["location"]).text
    assert "installed and enabled" in listing
    assert "status-enabled" in _row(listing, "shopify")
    disable = operator_client.post(
        f"{LIST}/{installed[0]}/enabled", data={"enabled": "false", "csrf_token": csrf_of(page)}
    )
    assert disable.status_code == 200 and "status-disabled" in _row(disable.text, "shopify")
    assert _installed("shopify")[1] is False  # type: ignore[index]
    enable = operator_client.post(
        f"{LIST}/{installed[0]}/enabled", data={"enabled": "true", "csrf_token": csrf_of(page)}
    )
    assert enable.status_code == 200 and _installed("shopify")[1] is True  # type: ignore[index]
    again = operator_client.post(
        LIST, data={"integration_name": "shopify", "csrf_token": csrf_of(page)}
    )
    assert again.status_code == 409 and "already installed" in again.text


def test_override_secret_is_masked_and_kept_when_sent_back(operator_client: TestClient) -> None:
    installed_id = _install("hubspot")
    page = operator_client.get(f"{LIST}/{installed_id}")
    saved = operator_client.post(
        f"{LIST}/{installed_id}/override",
        data={
            "override": json.dumps({"oauth": {"client_id": "cid", "client_secret": CLIENT_SECRET}}),
            "csrf_token": csrf_of(page),
        },
        follow_redirects=False,
    )
    assert saved.status_code == 303
    listing = operator_client.get(LIST).text
    assert CLIENT_SECRET not in listing and MASK in _row(listing, "hubspot")
    edit = operator_client.get(f"{LIST}/{installed_id}")
    text = html.unescape(_TEXTAREA.search(edit.text).group(1))  # type: ignore[union-attr]
    assert CLIENT_SECRET not in edit.text and MASK in text
    # Sending the masked text back (a client id changed) keeps the stored secret.
    text = text.replace('"cid"', '"cid-2"')
    resent = operator_client.post(
        f"{LIST}/{installed_id}/override",
        data={"override": text, "csrf_token": csrf_of(edit)},
        follow_redirects=False,
    )
    assert resent.status_code == 303
    assert _installed("hubspot")[2] == {  # type: ignore[index]
        "oauth": {"client_id": "cid-2", "client_secret": CLIENT_SECRET}
    }


@pytest.mark.parametrize(
    ("posted", "message"),
    [
        ('{"oauth": ', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"oauth": {"colour": "blue"}}', "override.oauth.colour: unknown key"),
    ],
)
def test_override_refused_shows_the_reason_and_keeps_the_text(
    operator_client: TestClient, posted: str, message: str
) -> None:
    installed_id = _install("hubspot")
    page = operator_client.get(f"{LIST}/{installed_id}")
    response = operator_client.post(
        f"{LIST}/{installed_id}/override", data={"override": posted, "csrf_token": csrf_of(page)}
    )
    assert response.status_code == 400
    assert message in html.unescape(response.text)
    assert html.unescape(_TEXTAREA.search(response.text).group(1)) == posted  # type: ignore[union-attr]
    assert _installed("hubspot")[2] == {}  # type: ignore[index]


def test_forms_without_csrf_change_nothing(operator_client: TestClient) -> None:
    installed_id = _install("sandbox")
    for path, data in [
        (LIST, {"integration_name": "shopify"}),
        (f"{LIST}/{installed_id}/enabled", {"enabled": "false"}),
        (f"{LIST}/{installed_id}/override", {"override": '{"a": 1}'}),
    ]:
        response = operator_client.post(path, data={**data, "csrf_token": "forged"})
        assert response.status_code == 403, path
    assert _installed("shopify") is None
    assert _installed("sandbox")[1:] == (True, {})  # type: ignore[index]


def test_another_environments_installation_is_absent(operator_client: TestClient) -> None:
    theirs = _install("sandbox", environment="staging")
    assert "status-enabled" not in _row(operator_client.get(LIST).text, "sandbox")
    csrf = csrf_of(operator_client.get(LIST))
    for method, path, data in [
        ("GET", "/console/staging/integrations", None),
        ("POST", "/console/staging/integrations", {"integration_name": "shopify"}),
        ("GET", f"{LIST}/{theirs}", None),
        ("POST", f"{LIST}/{theirs}/enabled", {"enabled": "false"}),
        ("POST", f"{LIST}/{theirs}/override", {"override": '{"a": 1}'}),
    ]:
        form = {**data, "csrf_token": csrf} if data is not None else None
        response = operator_client.request(method, path, data=form)
        assert response.status_code == 404, (method, path, response.text)
    assert _installed("sandbox", "staging")[1:] == (True, {})  # type: ignore[index]
    assert _installed("shopify", "staging") is None
