"""Watch a sync run finish in Debian's Chromium: a run of the sandbox account, queued through
/v1, shows as queued on its page; a real RQ worker runs it, and the page, which reloads itself
while the run is active (an HTTP ``Refresh`` header, no script), comes to show it completed
with the records it read. Screenshot as in test_console_browser.py
(docs/console-sync-run.png with SWITCHYARD_UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from playwright.sync_api import Page, expect

from tests.platform_api.console.conftest import PASSWORD
from tests.platform_api.console.screenshots import screenshot
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, work
from tests.platform_api.unified.conftest import upstream_for
from tests.platform_api.unified.providers import SANDBOX

pytestmark = [pytest.mark.db, pytest.mark.browser]

__all__ = ["upstream_for"]  # a fixture

# A bound on waiting for the outcome (two reloads of the page and the run), not a timing
# assertion.
FINISH_TIMEOUT_MS = 20_000


def test_watch_a_sync_run_finish(
    page: Page,
    live_server: str,
    client: TestClient,
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],  # noqa: F811
    make_operator: Callable[..., str],
    make_token: Callable[..., str],
) -> None:
    headers = {"Authorization": f"Bearer {make_token()}"}
    account = upstream_for(SANDBOX).account_id
    job = create_job(client, headers, RETURNS_JOB)
    run_id = start_run(client, headers, job["id"], account)
    make_operator("ops", ("development",))

    page.goto(f"{live_server}/console")
    page.get_by_label("Username").fill("ops")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
    page.goto(f"{live_server}/console/development/sync/runs/{run_id}")
    status = page.locator(".status")
    expect(status).to_have_text("queued")
    expect(page.get_by_text("this page reloads every few seconds")).to_be_visible()

    # The worker runs here while the browser's page keeps reloading itself.
    work(redis_client)

    expect(page.get_by_text("completed", exact=True)).to_be_visible(timeout=FINISH_TIMEOUT_MS)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=headers).json()
    assert run["status"] == "completed", run
    records = run["resource_stats"]["wms/returns"]["records"]
    assert records > 0
    row = page.get_by_role("row", name="wms/returns")
    expect(row.get_by_role("cell").nth(2)).to_have_text(str(records))
    expect(page.get_by_text("this page reloads every few seconds")).to_have_count(0)
    expect(page.get_by_role("link", name="Stop…")).to_have_count(0)
    screenshot(page, "console-sync-run.png", full_page=True)
