"""Sync jobs end to end: validation, runs executed by a real RQ worker through the unified
engine against the sandbox fake, events in the outbox, and the returns cache."""

from __future__ import annotations

import pytest
import redis
from fastapi.testclient import TestClient
from sqlmodel import col, select
from typer.testing import CliRunner

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.sync import CachedReturn
from switchyard.cli import app as cli
from tests.assertions import assert_error
from tests.platform_api.sync.helpers import create_job, work
from tests.platform_api.unified.fakes.common import Scripted
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import SANDBOX
from tests.platform_api.webhooks.conftest import create_webhook

pytestmark = pytest.mark.db

ORDERS_AND_RETURNS = {
    "integration_name": "sandbox",
    "resources": [
        {"resource": "wms/orders", "method": "list"},
        {"resource": "wms/returns", "method": "list"},
    ],
}


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ([{"resource": "wms/parcels"}], "resources[0].resource"),
        ([{"resource": "crm/contacts"}], "resources[0].resource"),
        ([{"resource": "wms/orders", "method": "delete"}], "resources[0].method"),
        ([{"resource": "wms/orders", "method": "awaiting_receipt"}], "resources[0].method"),
        ([{"resource": "wms/orders", "method": "List Them"}], "resources.0.method"),
        ([{"resource": "wms/orders", "method": "get"}], "resources[0].method"),
        ([{"resource": "wms/orders", "depends_on": "wms/returns"}], "resources[0].depends_on"),
        ([{"resource": "wms/orders"}, {"resource": "wms/orders"}], "resources[1].resource"),
        ([{"resource": "wms/returns", "query": {"order_id": "{{parent.id}}"}}],
         "resources[0].query.order_id"),
        ([{"resource": "wms/orders", "depends_on": "wms/returns"},
          {"resource": "wms/returns", "depends_on": "wms/orders"}], "resources"),
        ([{"resource": "proxy/store/../admin"}], "resources[0].resource"),
        ([{"resource": "proxy/"}], "resources[0].resource"),
        ([{"resource": "proxy/store/orders?state=NEW"}], "resources[0].resource"),
        ([{"resource": "proxy/store/orders/{{parent.id}}"}], "resources[0].resource"),
        ([{"resource": "proxy/store/orders", "method": "awaiting_receipt"}], "resources[0].method"),
        ([], "resources"),
    ],
)  # fmt: skip
def test_bad_jobs_are_400_naming_the_field(
    client: TestClient, auth_headers: dict[str, str], resources: list, field: str
) -> None:
    body = {"integration_name": "sandbox", "resources": resources}
    response = client.post("/v1/sync-job", json=body, headers=auth_headers)
    message = assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert field in message


def test_unknown_integration_is_400(client: TestClient, auth_headers: dict[str, str]) -> None:
    body = {**ORDERS_AND_RETURNS, "integration_name": "nope"}
    message = assert_error(client.post("/v1/sync-job", json=body, headers=auth_headers), 400,
                           "INVALID_REQUEST")["message"]  # fmt: skip
    assert "integration_name" in message


def test_jobs_are_listed_read_and_deleted_per_environment(
    client: TestClient, auth_headers: dict[str, str], make_token
) -> None:
    job = create_job(client, auth_headers, ORDERS_AND_RETURNS)
    assert job["resources"][1] == {
        "resource": "wms/returns", "method": "list", "depends_on": None, "query": {},
    }  # fmt: skip
    listed = client.get("/v1/sync-job", headers=auth_headers).json()
    assert [j["id"] for j in listed["result"]] == [job["id"]]
    staging = {"Authorization": f"Bearer {make_token('staging')}"}
    assert_error(client.get(f"/v1/sync-job/{job['id']}", headers=staging), 404, "NOT_FOUND")
    assert client.get(f"/v1/sync-job/{job['id']}", headers=auth_headers).json() == job
    assert client.delete(f"/v1/sync-job/{job['id']}", headers=auth_headers).status_code == 204
    assert_error(client.get(f"/v1/sync-job/{job['id']}", headers=auth_headers), 404, "NOT_FOUND")


def test_a_run_copies_every_page_into_the_cache_and_reports_by_events(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    account = upstream_for(SANDBOX).account_id
    webhook = create_webhook(client, auth_headers, "https://receiver.example/sync")
    job = create_job(client, auth_headers, ORDERS_AND_RETURNS)
    body = {"sync_job_id": job["id"], "integrated_account_id": account, "webhook_id": webhook["id"]}
    created = client.post("/v1/sync-job-run", json=body, headers=auth_headers)
    assert created.status_code == 201, created.text
    run = created.json()
    assert run["status"] == "queued"
    conflict = client.post("/v1/sync-job-run", json=body, headers=auth_headers)
    assert_error(conflict, 409, "CONFLICT")

    work(redis_client)

    done = client.get(f"/v1/sync-job-run/{run['id']}", headers=auth_headers).json()
    assert done["status"] == "completed", done
    live = {"integrated_account_id": account, "limit": 50}
    live_returns = [r for p in walk_pages(client, "/v1/unified/wms/returns", auth_headers, live)
                    for r in p]  # fmt: skip
    live_orders = [r for p in walk_pages(client, "/v1/unified/wms/orders", auth_headers, live)
                   for r in p]  # fmt: skip
    assert done["resource_stats"]["wms/returns"]["records"] == len(live_returns) > 0
    assert done["resource_stats"]["wms/orders"]["records"] == len(live_orders)

    cached = [r for p in walk_pages(client, "/v1/unified_cache/returns", auth_headers,
                                    {"integrated_account_id": account, "limit": 7})
              for r in p]  # fmt: skip
    assert all(r.pop("cached_at") for r in cached)
    assert sorted(cached, key=lambda r: r["id"]) == sorted(live_returns, key=lambda r: r["id"])
    one = live_returns[0]
    got = client.get(f"/v1/unified_cache/returns/{one['id']}",
                     params={"integrated_account_id": account}, headers=auth_headers)  # fmt: skip
    assert {k: v for k, v in got.json().items() if k != "cached_at"} == one

    with session_scope(settings) as session:
        events = session.exec(
            select(OutboxEvent).where(col(OutboxEvent.event_type).startswith("sync_job_run:"))
            .order_by(col(OutboxEvent.id))
        ).all()  # fmt: skip
    kinds = [e.event_type for e in events]
    pages = sum(s["pages"] for s in done["resource_stats"].values())
    assert kinds == ["sync_job_run:started", *["sync_job_run:record"] * pages,
                     "sync_job_run:completed"]  # fmt: skip
    assert {e.target_webhook_id for e in events} == {webhook["id"]}
    assert sum(len(e.payload["records"]) for e in events[1:-1]) == len(live_returns) + len(
        live_orders
    )

    # Running again is idempotent: the same cache, no duplicates.
    again = client.post("/v1/sync-job-run", json=body, headers=auth_headers)
    assert again.status_code == 201
    work(redis_client)
    recached = [r for p in walk_pages(client, "/v1/unified_cache/returns", auth_headers,
                                      {"integrated_account_id": account}) for r in p]  # fmt: skip
    assert sorted(r["id"] for r in recached) == sorted(r["id"] for r in live_returns)


def test_a_child_resource_runs_once_per_parent_record(
    client: TestClient, auth_headers: dict[str, str], redis_client: redis.Redis, upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    job = create_job(client, auth_headers, {
        "integration_name": "sandbox",
        "resources": [
            {"resource": "wms/returns", "depends_on": "wms/orders",
             "query": {"order_id": "{{parent.id}}"}},
            {"resource": "wms/orders"},
        ],
    })  # fmt: skip
    body = {"sync_job_id": job["id"], "integrated_account_id": upstream.account_id}
    run = client.post("/v1/sync-job-run", json=body, headers=auth_headers).json()
    work(redis_client)
    done = client.get(f"/v1/sync-job-run/{run['id']}", headers=auth_headers).json()
    assert done["status"] == "completed", done
    orders = done["resource_stats"]["wms/orders"]["records"]
    assert done["resource_stats"]["wms/returns"]["pages"] == orders  # one listing per order
    asked = [r["query"].get("order_id") for r in upstream.state.seen() if "return" in r["path"]]
    assert len(set(asked)) == orders and None not in asked


def test_cache_reads_need_an_account_and_bound_the_page(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    account = upstream_for(SANDBOX).account_id
    assert_error(client.get("/v1/unified_cache/returns", headers=auth_headers), 400,
                 "INVALID_REQUEST")  # fmt: skip
    too_many = {"integrated_account_id": account, "limit": 201}
    assert_error(client.get("/v1/unified_cache/returns", params=too_many, headers=auth_headers),
                 400, "INVALID_REQUEST")  # fmt: skip
    missing = client.get(
        "/v1/unified_cache/returns/rma_nope",
        params={"integrated_account_id": account},
        headers=auth_headers,
    )
    assert_error(missing, 404, "NOT_FOUND")


def test_deleting_the_account_removes_its_runs_and_cache(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    account = upstream_for(SANDBOX).account_id
    job = create_job(client, auth_headers, ORDERS_AND_RETURNS)
    body = {"sync_job_id": job["id"], "integrated_account_id": account}
    run = client.post("/v1/sync-job-run", json=body, headers=auth_headers).json()
    work(redis_client)
    assert (
        client.delete(f"/v1/integrated-account/{account}", headers=auth_headers).status_code == 204
    )
    assert_error(client.get(f"/v1/sync-job-run/{run['id']}", headers=auth_headers), 404,
                 "NOT_FOUND")  # fmt: skip
    with session_scope(settings) as session:
        assert session.exec(select(CachedReturn)).all() == []


def test_a_stopped_run_never_runs_and_says_so(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for,
) -> None:
    upstream = upstream_for(SANDBOX)
    job = create_job(client, auth_headers, ORDERS_AND_RETURNS)
    body = {"sync_job_id": job["id"], "integrated_account_id": upstream.account_id}
    run = client.post("/v1/sync-job-run", json=body, headers=auth_headers).json()
    stopped = client.post(f"/v1/sync-job-run/{run['id']}/stop", headers=auth_headers)
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "stopped" and stopped.json()["finished_at"]
    work(redis_client)  # the queued job finds the run stopped and does nothing
    assert (
        client.get(f"/v1/sync-job-run/{run['id']}", headers=auth_headers).json()["status"]
        == "stopped"
    )
    assert upstream.state.requests == []
    again = client.post(f"/v1/sync-job-run/{run['id']}/stop", headers=auth_headers)
    assert_error(again, 409, "CONFLICT")
    # A new run may start once the stopped one has ended.
    assert client.post("/v1/sync-job-run", json=body, headers=auth_headers).status_code == 201
    with session_scope(settings) as session:
        failed = session.exec(
            select(OutboxEvent).where(col(OutboxEvent.event_type) == "sync_job_run:failed")
        ).all()
    assert [e.payload["error"] for e in failed] == ["stopped by request"]


def test_switchyard_sync_run_executes_a_job_in_the_foreground(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    account = upstream_for(SANDBOX).account_id
    job = create_job(client, auth_headers, ORDERS_AND_RETURNS)
    result = CliRunner().invoke(cli, ["sync", "run", job["id"], "--account", account])
    assert result.exit_code == 0, result.output
    assert "completed" in result.output
    (run,) = client.get("/v1/sync-job-run", headers=auth_headers).json()["result"]
    assert run["status"] == "completed" and run["resource_stats"]["wms/returns"]["records"] > 0
    cached = client.get("/v1/unified_cache/returns", params={"integrated_account_id": account},
                        headers=auth_headers).json()["result"]  # fmt: skip
    assert len(cached) == min(50, run["resource_stats"]["wms/returns"]["records"])
    bad = CliRunner().invoke(cli, ["sync", "run", "sjob_nope", "--account", account])
    assert bad.exit_code == 1 and "NOT_FOUND" in bad.output


def test_a_complete_run_drops_vanished_returns_and_a_failed_one_drops_nothing(
    client: TestClient, auth_headers: dict[str, str], redis_client: redis.Redis, upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    job = create_job(client, auth_headers, {
        "integration_name": "sandbox", "resources": [{"resource": "wms/returns"}]})  # fmt: skip
    body = {"sync_job_id": job["id"], "integrated_account_id": upstream.account_id}
    params = {"integrated_account_id": upstream.account_id}

    def cached_ids() -> set[str]:
        pages = walk_pages(client, "/v1/unified_cache/returns", auth_headers, params)
        return {r["id"] for page in pages for r in page}

    def run_once() -> dict:
        run = client.post("/v1/sync-job-run", json=body, headers=auth_headers).json()
        work(redis_client)
        return client.get(f"/v1/sync-job-run/{run['id']}", headers=auth_headers).json()

    assert run_once()["status"] == "completed"
    before = cached_ids()
    gone = next(iter(upstream.data.returns))
    del upstream.data.returns[gone]  # deleted at the provider

    upstream.state.fail_next.append(Scripted(500, {"error": "boom"}))
    failed = run_once()
    assert failed["status"] == "failed" and failed["error"].startswith("UPSTREAM_ERROR")
    assert failed["resource_stats"]["wms/returns"]["errors"] == 1
    assert cached_ids() == before  # a failed run deletes nothing

    assert run_once()["status"] == "completed"
    assert cached_ids() == before - {gone}
