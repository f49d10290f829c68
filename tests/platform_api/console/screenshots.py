"""Screenshots of console pages: always into the test output directory; with
SWITCHYARD_UPDATE_SCREENSHOTS=1 also over the ones docs/console.md shows, to be committed when
the pages change (a token's secret and the times differ in every run, so writing them every
time would leave the docs changed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
OUTPUT = Path(os.environ.get("SWITCHYARD_TEST_OUTPUT", REPO / "test-output")) / "console"
UPDATE_DOCS = os.environ.get("SWITCHYARD_UPDATE_SCREENSHOTS") == "1"


def screenshot(page: Page, name: str, *, full_page: bool = False) -> None:
    """The page as a PNG in the test output, and in docs/ when asked to update them."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / name
    page.screenshot(path=str(path), full_page=full_page)
    if UPDATE_DOCS:
        shutil.copyfile(path, DOCS / name)
