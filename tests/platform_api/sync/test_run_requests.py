"""Runs, triggers and cache reads refuse bad input field by field, and a provider that
refuses the account's credentials fails the run and flags the account."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlmodel import col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.tables.outbox import OutboxEvent
from tests.assertions import assert_error
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, work
from tests.platform_api.unified.fakes.common import Scripted
from tests.platform_api.unified.providers import SANDBOX, SANDBOX_CRM
from tests.platform_api.webhooks.conftest import create_webhook

pytestmark = pytest.mark.db


@pytest.fixture
def ids(client: TestClient, auth_headers: dict[str, str], upstream_for) -> dict[str, str]:
    """A sandbox job, a sandbox account, and a CRM account (another integration)."""
    return {
        "job": create_job(client, auth_headers, RETURNS_JOB)["id"],
        "account": upstream_for(SANDBOX).account_id,
        "crm_account": upstream_for(SANDBOX_CRM).account_id,
    }


def _body(ids: dict[str, str], **changes: Any) -> dict[str, Any]:
    body = {"sync_job_id": ids["job"], "integrated_account_id": ids["account"], **changes}
    return {k: v for k, v in body.items() if v is not None}


BAD_RUNS = [
    # (changes to a good body, status, code, what the message names)
    ({"sync_job_id": None}, 400, "INVALID_REQUEST", "sync_job_id"),
    ({"integrated_account_id": None}, 400, "INVALID_REQUEST", "integrated_account_id"),
    ({"sync_job_id": "sjob_" + "x" * 40}, 400, "INVALID_REQUEST", "sync_job_id"),
    ({"sync_job_id": 7}, 400, "INVALID_REQUEST", "sync_job_id"),
    ({"webhook_id": "wh_nope"}, 400, "INVALID_REQUEST", "webhook_id"),
    ({"extra": "x"}, 400, "INVALID_REQUEST", "extra"),
    ({"sync_job_id": "sjob_nope"}, 404, "NOT_FOUND", "sjob_nope"),
    ({"integrated_account_id": "acct_nope"}, 404, "NOT_FOUND", "acct_nope"),
]


@pytest.mark.parametrize(("changes", "status", "code", "named"), BAD_RUNS)
@pytest.mark.parametrize("endpoint", ["/v1/sync-job-run", "/v1/sync-job-cron-trigger"])
def test_bad_run_and_trigger_requests_say_which_field(
    client: TestClient,
    auth_headers: dict[str, str],
    ids: dict[str, str],
    endpoint: str,
    changes: dict[str, Any],
    status: int,
    code: str,
    named: str,
) -> None:
    body = _body(ids, **changes)
    if endpoint.endswith("trigger"):
        body["cron_expression"] = "0 * * * *"
    response = client.post(endpoint, json=body, headers=auth_headers)
    assert named in assert_error(response, status, code)["message"]


def test_an_account_of_another_integration_is_refused(
    client: TestClient, auth_headers: dict[str, str], ids: dict[str, str]
) -> None:
    body = _body(ids, integrated_account_id=ids["crm_account"])
    response = client.post("/v1/sync-job-run", json=body, headers=auth_headers)
    assert "integrated_account_id" in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_another_environments_records_are_404(
    client: TestClient, auth_headers: dict[str, str], ids: dict[str, str], make_token
) -> None:
    run_id = start_run(client, auth_headers, ids["job"], ids["account"])
    production = {"Authorization": f"Bearer {make_token('production')}"}
    for path in (f"/v1/sync-job/{ids['job']}", f"/v1/sync-job-run/{run_id}"):
        assert_error(client.get(path, headers=production), 404, "NOT_FOUND")
    response = client.post("/v1/sync-job-run", json=_body(ids), headers=production)
    assert_error(response, 404, "NOT_FOUND")
    assert client.get("/v1/sync-job-run", headers=production).json()["result"] == []


@pytest.mark.parametrize(
    ("params", "named"),
    [({"status": "bogus"}, "status"), ({"limit": "0"}, "limit"), ({"next_cursor": "nope"}, "")],
)
def test_bad_run_listings_are_400(
    client: TestClient, auth_headers: dict[str, str], params: dict[str, str], named: str
) -> None:
    response = client.get("/v1/sync-job-run", params=params, headers=auth_headers)
    assert named in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_cache_filters(
    client: TestClient, auth_headers: dict[str, str], redis_client: redis.Redis, ids
) -> None:
    start_run(client, auth_headers, ids["job"], ids["account"])
    work(redis_client)
    base = {"integrated_account_id": ids["account"], "limit": 200}
    every = client.get("/v1/unified_cache/returns", params=base, headers=auth_headers).json()
    open_only = client.get("/v1/unified_cache/returns", params={**base, "status": "open"},
                           headers=auth_headers).json()["result"]  # fmt: skip
    expected = [r["id"] for r in every["result"] if r["status"] == "open"]
    assert [r["id"] for r in open_only] == expected and expected
    newest = max(r["updated_at"] for r in every["result"])
    later = client.get("/v1/unified_cache/returns", params={**base, "updated_after": newest},
                       headers=auth_headers).json()["result"]  # fmt: skip
    assert later == []
    bad = client.get("/v1/unified_cache/returns", params={**base, "updated_after": "yesterday"},
                     headers=auth_headers)  # fmt: skip
    assert "updated_after" in assert_error(bad, 400, "INVALID_REQUEST")["message"]


def test_refused_credentials_fail_the_run_and_flag_the_account(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    upstream = upstream_for(SANDBOX)
    upstream.state.fail_next.append(Scripted(401, {"error": {"message": "invalid API key"}}))
    hook = create_webhook(client, auth_headers, "https://receiver.example/sync")
    job = create_job(client, auth_headers, RETURNS_JOB)
    body = {"sync_job_id": job["id"], "integrated_account_id": upstream.account_id,
            "webhook_id": hook["id"]}  # fmt: skip
    run_id = client.post("/v1/sync-job-run", json=body, headers=auth_headers).json()["id"]
    work(redis_client)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "failed" and run["error"].startswith("INTEGRATION_UNAUTHORIZED")
    account = client.get(f"/v1/integrated-account/{upstream.account_id}", headers=auth_headers)
    assert account.json()["status"] == "needs_reauth"
    with session_scope(settings) as session:
        events = session.exec(
            select(OutboxEvent.event_type).order_by(col(OutboxEvent.id))
        ).all()  # fmt: skip
    assert "integrated_account:authentication_error" in events
    assert events[-1] == "sync_job_run:failed"
