"""The integrations and accounts sections in Debian's Chromium: sign in, see the catalog, find
an account by tenant id, create a reconnect link, delete an account after confirming.

Screenshots go to the test output directory, and to docs/ with SWITCHYARD_UPDATE_SCREENSHOTS=1
(see test_console_browser.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Page, expect

from platform_api.tables.common import utcnow
from tests.platform_api.console.conftest import PASSWORD
from tests.platform_api.console.screenshots import screenshot
from tests.platform_api.console.test_accounts_page import account_exists, log_call, make_account

pytestmark = [pytest.mark.db, pytest.mark.browser]


def test_find_reconnect_and_delete_an_account(
    page: Page,
    live_server: str,
    client: TestClient,
    make_operator: Callable[..., str],
) -> None:
    make_operator("ops", ("development",))
    now = utcnow()  # the live server's console clock is the wall clock
    kept = make_account("acme-warehouse", created_at=now - timedelta(days=3))
    log_call(kept, now - timedelta(minutes=4))
    make_account("globex-crm", integration="sandbox_crm", created_at=now - timedelta(hours=5))
    make_account("initech", status="needs_reauth", created_at=now - timedelta(minutes=42))
    gone = make_account("umbrella", created_at=now - timedelta(days=12))

    page.goto(f"{live_server}/console")
    page.get_by_label("Username").fill("ops")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    page.get_by_role("link", name="Integrations").click()
    expect(page.get_by_role("heading", name="Integrations")).to_be_visible()
    expect(page.get_by_role("row", name="Sandbox CRM")).to_contain_text("enabled")
    expect(page.get_by_role("row", name="HubSpot")).to_contain_text("not installed")
    screenshot(page, "console-integrations.png", full_page=True)

    page.get_by_role("link", name="Accounts").click()
    expect(page.get_by_role("heading", name="Integrated accounts")).to_be_visible()
    screenshot(page, "console-accounts.png", full_page=True)
    page.get_by_label("Tenant id").fill("acme-warehouse")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("row")).to_have_count(2)  # the header and the one account
    row = page.get_by_role("row", name="acme-warehouse")
    expect(row).to_contain_text("4 min ago")

    row.get_by_role("link", name="acme-warehouse").click()
    page.get_by_role("button", name="Create reconnect link").click()
    url = page.locator("#connect-url").inner_text()
    link_token = parse_qs(urlsplit(url).query)["link_token"][0]
    session = client.get("/connect-account/session", params={"link_token": link_token})
    assert session.status_code == 200, session.text

    page.goto(f"{live_server}/console/development/accounts/{gone}")
    page.get_by_role("link", name="Delete this account…").click()
    expect(page.get_by_role("heading", name="Delete umbrella?")).to_be_visible()
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_contain_text("The account is deleted")
    expect(page.get_by_role("row", name="umbrella")).to_have_count(0)
    assert not account_exists(gone) and account_exists(kept)
