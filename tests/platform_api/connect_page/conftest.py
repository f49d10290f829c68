"""Browser fixtures: Debian's Chromium driven by Playwright, the app served over HTTP with
the sandbox behind it, and screenshots kept under the test output directory."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, sync_playwright

from core.settings import get_settings
from sandbox import app as sandbox_app
from switchyard.app import create_app
from tests.conftest import ServerThread, free_port

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = os.environ.get("SWITCHYARD_CHROMIUM", "/usr/bin/chromium")
# Screenshots of each page state: <repo>/test-output/connect-page/ unless set elsewhere.
OUTPUT = Path(os.environ.get("SWITCHYARD_TEST_OUTPUT", REPO / "test-output")) / "connect-page"


# Module scope: Playwright's sync API keeps an event loop running in this thread while it is
# open, and asyncio.run() elsewhere in the session (the sync CLI, workers) would then fail.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not shutil.which(CHROMIUM):
        # Never a skip: `make test` installs it (see docs/development.md); CI must run these tests.
        pytest.fail(f"no Chromium at {CHROMIUM}: run `make browser` (apt-get install chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 390, "height": 800})  # a phone's width
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def front_port() -> int:
    return free_port()


@pytest.fixture
def sandbox() -> Iterator[ServerThread]:
    """The sandbox provider on loopback: its API (the credential check calls it) and its
    OAuth authorization server."""
    with ServerThread(sandbox_app.create_app()) as server:
        yield server


@pytest.fixture
def app(
    db: None, monkeypatch: pytest.MonkeyPatch, sandbox: ServerThread, front_port: int
) -> Iterator[FastAPI]:
    monkeypatch.setenv("SWITCHYARD_SANDBOX_URL", sandbox.url)
    # The OAuth redirect URI names the front's own address.
    monkeypatch.setenv("SWITCHYARD_PORT", str(front_port))
    get_settings.cache_clear()
    yield create_app(get_settings())
    get_settings.cache_clear()


@pytest.fixture
def live(app: FastAPI, front_port: int) -> Iterator[str]:
    with ServerThread(app, port=front_port) as server:
        yield server.url


class Shots:
    def __init__(self, test_name: str) -> None:
        self.prefix = re.sub(r"[^A-Za-z0-9_-]+", "-", test_name).strip("-")

    def take(self, page: Page, state: str) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        path = OUTPUT / f"{self.prefix}-{state}.png"
        page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Shots:
    return Shots(request.node.name)
