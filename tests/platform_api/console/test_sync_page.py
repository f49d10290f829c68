"""The sync section: jobs, runs with their per-resource progress (paged), a run's page that
reloads itself while active, stopping a run (asked first, CSRF-checked), cron triggers with
their next fire time by the console's clock; and another environment's run is absent."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.tables.sync import SyncJobRun
from tests.platform_api.console.conftest import Clock, csrf_of
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.unified.providers import SANDBOX

pytestmark = pytest.mark.db


def _run_in(
    client: TestClient, make_token: Callable[..., str], environment: str = "development"
) -> tuple[dict[str, str], dict[str, Any], str, str]:
    """A queued run (no worker takes it) of a returns job: headers, job, account, run id."""
    headers = {"Authorization": f"Bearer {make_token(environment)}"}
    account = make_account("sandbox", SANDBOX.credentials, base_url=None, environment=environment)
    job = create_job(client, headers, RETURNS_JOB)
    return headers, job, account, start_run(client, headers, job["id"], account)


def _progress(run_id: str, clock: Clock, **fields: Any) -> None:
    """What a worker writes as it goes (started, pages read): set on the row directly."""
    with session_scope(get_settings()) as session:
        run = session.get(SyncJobRun, run_id)
        assert run is not None
        run.started_at = clock.now - timedelta(minutes=3)
        for name, value in fields.items():
            setattr(run, name, value)
        session.add(run)


def _status(client: TestClient, headers: dict[str, str], run_id: str) -> str:
    return client.get(f"/v1/sync-job-run/{run_id}", headers=headers).json()["status"]


def test_sync_page_lists_jobs_runs_with_progress_and_triggers(
    operator_client: TestClient, make_token: Callable[..., str], clock: Clock
) -> None:
    headers, job, account, run_id = _run_in(operator_client, make_token)
    stats = {"wms/returns": {"pages": 3, "records": 142, "errors": 1}}
    _progress(run_id, clock, status="running", resource_stats=stats)
    trigger = operator_client.post(
        "/v1/sync-job-cron-trigger",
        json={"sync_job_id": job["id"], "integrated_account_id": account,
              "cron_expression": "30 * * * *"},
        headers=headers,
    )  # fmt: skip
    assert trigger.status_code == 201, trigger.text

    page = operator_client.get("/console/development/sync")
    assert page.status_code == 200
    text = page.text
    assert job["id"] in text and "sandbox" in text and "wms/returns" in text
    row = text[text.index(f'<tr id="{run_id}">') :].split("</tr>")[0]
    assert 'class="status status-running"' in row and account in row
    assert "3&nbsp;p" in row and "142&nbsp;rec" in row and "1&nbsp;err" in row
    assert 'title="2026-11-27 08:57:00 UTC">3 min ago</time>' in row
    # The clock says 09:00, so the next half past is 09:30, in 30 minutes.
    trigger_row = text[text.index(f'<tr id="{trigger.json()["id"]}">') :].split("</tr>")[0]
    assert "30 * * * *" in trigger_row
    assert 'title="2026-11-27 09:30:00 UTC">in 30 min</time>' in trigger_row
    assert 'href="/console/development/sync" aria-current="page"' in text


def test_runs_are_paged_newest_first(
    operator_client: TestClient, make_token: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from platform_api.console import sync as console_sync

    monkeypatch.setattr(console_sync, "RUNS_PER_PAGE", 1)
    headers, job, account, first = _run_in(operator_client, make_token)
    assert operator_client.post(f"/v1/sync-job-run/{first}/stop", headers=headers).is_success
    second = start_run(operator_client, headers, job["id"], account)

    newest = operator_client.get("/console/development/sync").text
    assert second in newest and first not in newest
    older = re.search(r'href="(/console/development/sync\?runs_after=[^"]+)">Older runs', newest)
    assert older, newest
    page_two = operator_client.get(older.group(1).replace("&amp;", "&")).text
    assert first in page_two and second not in page_two
    assert 'class="status status-stopped"' in page_two
    assert "Newest runs" in page_two


def test_active_run_page_shows_stats_and_reloads_itself(
    operator_client: TestClient, make_token: Callable[..., str], clock: Clock
) -> None:
    _, _, _, run_id = _run_in(operator_client, make_token)
    stats = {"wms/returns": {"pages": 2, "records": 40, "errors": 0}}
    _progress(run_id, clock, status="running", resource_stats=stats)
    page = operator_client.get(f"/console/development/sync/runs/{run_id}")
    assert page.status_code == 200
    assert page.headers["refresh"] == "5"
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert "<script" not in page.text
    assert "<td>2</td>" in page.text and "<td>40</td>" in page.text
    assert f'href="/console/development/sync/runs/{run_id}/stop"' in page.text


def test_stop_asks_first_then_stops_the_run(
    operator_client: TestClient, make_token: Callable[..., str]
) -> None:
    headers, _, _, run_id = _run_in(operator_client, make_token)
    confirm = operator_client.get(f"/console/development/sync/runs/{run_id}/stop")
    assert confirm.status_code == 200 and f"Stop run {run_id}?" in confirm.text
    assert _status(operator_client, headers, run_id) == "queued"  # not yet
    response = operator_client.post(
        f"/console/development/sync/runs/{run_id}/stop",
        data={"csrf_token": csrf_of(confirm)},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == (
        f"/console/development/sync/runs/{run_id}?notice=stopped"
    )
    run = operator_client.get(f"/v1/sync-job-run/{run_id}", headers=headers).json()
    assert run["status"] == "stopped" and run["error"] == "stopped by request"
    after = operator_client.get(response.headers["location"])
    assert "writes nothing more" in after.text and "status-stopped" in after.text
    assert "refresh" not in after.headers  # ended: no more reloading
    assert "Stop…" not in after.text
    again = operator_client.post(
        f"/console/development/sync/runs/{run_id}/stop", data={"csrf_token": csrf_of(confirm)}
    )
    assert again.status_code == 409 and "already ended" in again.text


def test_stop_without_the_csrf_token_leaves_the_run_going(
    operator_client: TestClient, make_token: Callable[..., str]
) -> None:
    headers, _, _, run_id = _run_in(operator_client, make_token)
    for data in ({"csrf_token": ""}, {"csrf_token": "another-sessions-token"}):
        response = operator_client.post(f"/console/development/sync/runs/{run_id}/stop", data=data)
        assert response.status_code == 403
    assert _status(operator_client, headers, run_id) == "queued"


def test_another_environments_run_is_absent(
    operator_client: TestClient, make_token: Callable[..., str]
) -> None:
    staging_headers, staging_job, _, theirs = _run_in(operator_client, make_token, "staging")
    listing = operator_client.get("/console/development/sync").text
    assert theirs not in listing and staging_job["id"] not in listing
    csrf = csrf_of(operator_client.get("/console/development/sync"))
    for method, path, data in [
        ("GET", "/console/staging/sync", None),
        ("GET", f"/console/staging/sync/runs/{theirs}", None),
        ("POST", f"/console/staging/sync/runs/{theirs}/stop", {"csrf_token": csrf}),
        # Another environment's run through one's own environment: absent too.
        ("GET", f"/console/development/sync/runs/{theirs}", None),
        ("GET", f"/console/development/sync/runs/{theirs}/stop", None),
        ("POST", f"/console/development/sync/runs/{theirs}/stop", {"csrf_token": csrf}),
    ]:
        response = operator_client.request(method, path, data=data)
        assert response.status_code == 404, (method, path, response.text)
        assert "<html" in response.text
    assert _status(operator_client, staging_headers, theirs) == "queued"


def test_sync_page_needs_a_session(client: TestClient) -> None:
    response = client.get("/console/development/sync", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/console/sign-in"
