"""The console in Debian's Chromium: sign in, create a token, see it listed, revoke it.

Its screenshots: see screenshots.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Page, expect

from tests.platform_api.console.conftest import PASSWORD
from tests.platform_api.console.screenshots import screenshot
from tests.platform_api.factories import bearer

pytestmark = [pytest.mark.db, pytest.mark.browser]

PROBE = "/v1/integrated-account"


def test_sign_in_create_list_and_revoke_a_token(
    page: Page, live_server: str, client: TestClient, make_operator: Callable[..., str]
) -> None:
    make_operator("ops", ("development", "staging"))
    page.goto(f"{live_server}/console")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Username").fill("ops")
    page.get_by_label("Password").fill(PASSWORD)
    screenshot(page, "console-sign-in.png")
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
    assert page.url == f"{live_server}/console/development/tokens"
    page.get_by_label("Name").fill("checkout service")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#secret").inner_text()
    assert secret.startswith("sy_")
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200

    page.get_by_role("link", name="Back to the tokens").click()
    row = page.get_by_role("row", name="checkout service")
    expect(row).to_contain_text("active")
    expect(row).to_contain_text(secret[:10])
    screenshot(page, "console-tokens.png", full_page=True)

    row.get_by_role("link", name="Revoke…").click()
    page.get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status")).to_contain_text("stopped working at once")
    expect(page.get_by_role("row", name="checkout service")).to_contain_text("revoked")
    assert client.get(PROBE, headers=bearer(secret)).status_code == 401

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.goto(f"{live_server}/console/development/tokens")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
