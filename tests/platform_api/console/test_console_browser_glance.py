"""The API log and inference pages in Debian's Chromium: reach the API log from an account's
page, filter it, and open the inference glance.

Screenshots go to the test output directory, and to docs/ with SWITCHYARD_UPDATE_SCREENSHOTS=1
(see test_console_browser.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Page, expect

from platform_api.tables.common import utcnow
from tests.platform_api.console.conftest import PASSWORD, Clock
from tests.platform_api.console.screenshots import screenshot
from tests.platform_api.console.test_accounts_page import make_account
from tests.platform_api.console.test_api_log_page import log_entry

pytestmark = [pytest.mark.db, pytest.mark.browser]


def test_filter_the_api_log_and_glance_at_inference(
    page: Page,
    live_server: str,
    client: TestClient,
    make_operator: Callable[..., str],
) -> None:
    make_operator("ops", ("development",))
    now = Clock()
    now.now = utcnow()  # the live server's console clock is the wall clock
    acme, globex = make_account("acme-warehouse"), make_account("globex-crm")
    # Logged oldest first, as calls are (the log lists newest first by id).
    for minutes, status in ((31, 502), (15, 200), (7, 404)):
        log_entry(acme, now, status=status, minutes_ago=minutes,
                  error="upstream timed out" if status == 502 else None)  # fmt: skip
    log_entry(globex, now, path="/v1/crm/contacts", minutes_ago=4)
    log_entry(acme, now, minutes_ago=2)

    page.goto(f"{live_server}/console")
    page.get_by_label("Username").fill("ops")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    page.get_by_role("link", name="API log").click()
    expect(page.get_by_role("heading", name="API log")).to_be_visible()
    expect(page.get_by_role("row")).to_have_count(6)  # the header and five calls
    screenshot(page, "console-api-log.png", full_page=True)

    page.goto(f"{live_server}/console/development/accounts/{acme}")
    page.get_by_role("link", name="API log").last.click()
    expect(page.get_by_role("row")).to_have_count(5)
    page.get_by_label("Status").select_option("5xx")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("row")).to_have_count(2)
    expect(page.get_by_role("row").last).to_contain_text("upstream timed out")

    page.get_by_role("link", name="Inference").click()
    expect(page.get_by_role("heading", name="Inference")).to_be_visible()
    expect(page.locator("#served-version")).not_to_have_text("none found")
    expect(page.get_by_role("link", name="Ray dashboard")).to_be_visible()
    screenshot(page, "console-inference.png", full_page=True)
