"""The console in Debian's Chromium: sign in, create a token, see it listed, revoke it.

Each run writes its screenshots to the test output directory; with
SWITCHYARD_UPDATE_SCREENSHOTS=1 it also replaces the ones docs/console.md shows
(docs/console-*.png), to be committed when the pages change (a token's secret and creation
time differ in every run, so writing them every time would leave the docs changed)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Page, expect

from tests.platform_api.console.conftest import PASSWORD
from tests.platform_api.factories import bearer

pytestmark = [pytest.mark.db, pytest.mark.browser]

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
OUTPUT = Path(os.environ.get("SWITCHYARD_TEST_OUTPUT", REPO / "test-output")) / "console"
UPDATE_DOCS = os.environ.get("SWITCHYARD_UPDATE_SCREENSHOTS") == "1"
PROBE = "/v1/integrated-account"


def screenshot(page: Page, name: str, *, full_page: bool = False) -> None:
    """The page as a PNG in the test output, and in docs/ when asked to update them."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / name
    page.screenshot(path=str(path), full_page=full_page)
    if UPDATE_DOCS:
        shutil.copyfile(path, DOCS / name)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    yield tab
    context.close()


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
