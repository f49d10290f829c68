"""The sync and webhooks sections in Debian's Chromium: open a run and see its progress,
stop it after confirming, replay a webhook delivery. Screenshots as in
test_console_browser.py (docs/console-sync.png, docs/console-webhooks.png with
SWITCHYARD_UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Page, expect

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.tables.common import utcnow
from platform_api.tables.sync import SyncJobRun
from tests.platform_api.console.conftest import PASSWORD
from tests.platform_api.console.screenshots import screenshot
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.unified.providers import SANDBOX
from tests.platform_api.webhooks.conftest import create_webhook, deliveries

pytestmark = [pytest.mark.db, pytest.mark.browser]


def _running_run(client: TestClient, headers: dict[str, str]) -> str:
    """A run a worker has started and read three pages of (set on its row, no worker)."""
    account = make_account("sandbox", SANDBOX.credentials, base_url=None)
    job = create_job(client, headers, RETURNS_JOB)
    run_id = start_run(client, headers, job["id"], account)
    trigger = {"sync_job_id": job["id"], "integrated_account_id": account,
               "cron_expression": "30 2 * * *"}  # fmt: skip
    assert client.post("/v1/sync-job-cron-trigger", json=trigger, headers=headers).is_success
    with session_scope(get_settings()) as session:
        run = session.get(SyncJobRun, run_id)
        assert run is not None
        run.status, run.started_at = "running", utcnow()
        run.resource_stats = {"wms/returns": {"pages": 3, "records": 142, "errors": 1}}
        session.add(run)
    return run_id


def test_open_a_run_stop_it_and_replay_a_delivery(
    page: Page,
    live_server: str,
    client: TestClient,
    make_operator: Callable[..., str],
    make_token: Callable[..., str],
) -> None:
    headers = {"Authorization": f"Bearer {make_token()}"}
    run_id = _running_run(client, headers)
    webhook = create_webhook(client, headers, "https://receiver.example/switchyard")
    sent = client.post("/v1/webhook/test", json={"id": webhook["id"]}, headers=headers)
    assert sent.status_code == 202, sent.text
    make_operator("ops", ("development",))

    page.goto(f"{live_server}/console")
    page.get_by_label("Username").fill("ops")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Sync").click()
    expect(page.get_by_role("heading", name="Sync")).to_be_visible()
    row = page.get_by_role("row", name=run_id)
    expect(row).to_contain_text("running")
    expect(row).to_contain_text("142")
    screenshot(page, "console-sync.png", full_page=True)

    row.get_by_role("link", name=run_id).click()
    stats = page.get_by_role("row", name="wms/returns")
    expect(stats).to_contain_text("142")
    page.get_by_role("link", name="Stop…").click()
    page.get_by_role("button", name="Stop the run").click()
    expect(page.get_by_role("status")).to_contain_text("writes nothing more")
    expect(page.locator(".status")).to_have_text("stopped")
    stopped = client.get(f"/v1/sync-job-run/{run_id}", headers=headers).json()
    assert stopped["status"] == "stopped"

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Webhooks").click()
    page.get_by_role("link", name="https://receiver.example/switchyard").click()
    expect(page.get_by_role("row", name="webhook:test")).to_have_count(1)
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_role("status")).to_contain_text("queued again")
    expect(page.get_by_role("row", name="webhook:test")).to_have_count(2)
    assert len(deliveries(client, headers, webhook["id"])) == 2
    screenshot(page, "console-webhooks.png", full_page=True)
