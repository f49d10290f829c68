"""Console fixtures: operators made through the service, a signed-in browser-like client, and
a clock the tests move (sessions expire by it, never by the wall clock)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx import Response
from playwright.sync_api import Browser, Page

from core.settings import get_settings
from platform_api.console.auth import console_now
from platform_api.db import session_scope
from platform_api.services.console_users import create_user

# The browser fixtures of the connect-page tests: Debian's Chromium driven by Playwright.
from tests.platform_api.connect_page.conftest import browser  # noqa: F401

PASSWORD = "correct horse battery staple"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@pytest.fixture
def clock(app: FastAPI) -> Iterator[Clock]:
    moving = Clock()
    app.dependency_overrides[console_now] = lambda: moving.now
    yield moving
    app.dependency_overrides.pop(console_now, None)


@pytest.fixture
def make_operator(db: None) -> Callable[..., str]:
    """Create an operator (password ``PASSWORD``); returns the username."""

    def _make(username: str = "ops", environments: tuple[str, ...] = ("development",)) -> str:
        with session_scope(get_settings()) as session:
            create_user(session, username=username, environments=environments, password=PASSWORD)
        return username

    return _make


def csrf_of(response: Response) -> str:
    found = _CSRF.search(response.text)
    assert found, response.text
    return found.group(1)


def sign_in(client: TestClient, username: str, password: str = PASSWORD) -> Response:
    """Open the sign-in page and post its form, as a browser does (redirects not followed)."""
    page = client.get("/console/sign-in")
    assert page.status_code == 200, page.text
    return client.post(
        "/console/sign-in",
        data={"username": username, "password": password, "csrf_token": csrf_of(page)},
        follow_redirects=False,
    )


@pytest.fixture
def operator_client(
    client: TestClient, clock: Clock, make_operator: Callable[..., str]
) -> TestClient:
    """A client signed in as ``ops`` (development only)."""
    response = sign_in(client, make_operator())
    assert response.status_code == 303, response.text
    return client


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:  # noqa: F811 - the imported fixture
    """A tab of its own, in a context of its own (no cookies shared between tests)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    yield tab
    context.close()
