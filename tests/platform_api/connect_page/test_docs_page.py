"""/docs in a real browser: Authorize with an API token, then try the classify operation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.sync_api import Page, expect

from core.settings import get_settings
from switchyard.app import create_app
from tests.conftest import ServerThread
from tests.platform_api.connect_page.conftest import OUTPUT
from tests.serving.in_process import InProcessClassifier

pytestmark = [pytest.mark.browser, pytest.mark.db]


@pytest.fixture
def docs_app(db: None, shipped_model_dir: Path) -> FastAPI:
    return create_app(get_settings(), classifier=InProcessClassifier(shipped_model_dir))


@pytest.fixture
def docs_live(docs_app: FastAPI) -> Iterator[str]:
    with ServerThread(docs_app) as server:
        yield server.url


def test_docs_authorizes_and_tries_classify(
    page: Page, docs_live: str, make_token: Callable[..., str]
) -> None:
    token = make_token()
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{docs_live}/docs")
    page.get_by_role("button", name="Authorize").first.click()
    page.locator(".auth-container input").fill(token)
    page.locator(".auth-btn-wrapper button.authorize").click()
    page.locator(".auth-btn-wrapper button.btn-done").click()

    operation = page.locator("#operations-Inference-classify_intent")
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    # The body is the document's example: a real support message.
    expect(operation.locator("textarea.body-param__text")).to_contain_text("where is my parcel")
    operation.get_by_role("button", name="Execute").click()

    answer = operation.locator(".live-responses-table tbody .response-col_status").first
    expect(answer).to_have_text("200", timeout=15_000)
    expect(operation.locator(".live-responses-table .microlight").first).to_contain_text(
        '"top_intent": "track_order"'
    )
    OUTPUT.mkdir(parents=True, exist_ok=True)
    operation.screenshot(path=str(OUTPUT / "docs-classify-tried.png"))
