"""What a sync job can read besides a unified list: a custom method the integration declares
(also served live at ``…/<resource>:<name>``) and provider paths through the proxy API."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from platform_api.sync.runner import bind_path
from tests.assertions import assert_error
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, work
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import SANDBOX

pytestmark = pytest.mark.db


def _cached_ids(client: TestClient, headers: dict[str, str], account: str) -> set[str]:
    pages = walk_pages(client, "/v1/unified_cache/returns", headers,
                       {"integrated_account_id": account, "limit": 200})  # fmt: skip
    return {r["id"] for page in pages for r in page}


def test_a_custom_method_is_served_live_and_paged(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    params = {"integrated_account_id": upstream.account_id, "limit": 3}
    pages = walk_pages(client, "/v1/unified/wms/returns:awaiting_receipt", auth_headers, params)
    got = [r for page in pages for r in page]
    expected = sorted(k for k, r in upstream.data.returns.items() if r["state"] == "AUTHORIZED")
    assert len(pages) > 1 and sorted(r["id"] for r in got) == expected
    assert {r["status"] for r in got} == {"open"}
    assert all(line["sku"] for r in got for line in r["line_items"])  # the same after-steps

    order_id = got[0]["order_id"]
    one_order = client.get(
        "/v1/unified/wms/returns:awaiting_receipt",
        params={**params, "order_id": order_id},
        headers=auth_headers,
    )
    assert {r["order_id"] for r in one_order.json()["result"]} == {order_id}
    schema = client.get("/openapi.json").json()
    assert "get" in schema["paths"]["/v1/unified/wms/returns:awaiting_receipt"]


def test_a_job_reads_with_a_custom_method_and_drops_nothing_it_did_not_list(
    client: TestClient, auth_headers: dict[str, str], redis_client: redis.Redis, upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    account = upstream.account_id
    everything = create_job(client, auth_headers, RETURNS_JOB)
    start_run(client, auth_headers, everything["id"], account)
    work(redis_client)
    all_returns = _cached_ids(client, auth_headers, account)
    assert all_returns == set(upstream.data.returns)

    job = create_job(client, auth_headers, {
        "integration_name": "sandbox",
        "resources": [{"resource": "wms/returns", "method": "awaiting_receipt"}],
    })  # fmt: skip
    run_id = start_run(client, auth_headers, job["id"], account)
    work(redis_client)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "completed", run
    authorized = [r for r in upstream.data.returns.values() if r["state"] == "AUTHORIZED"]
    assert run["resource_stats"]["wms/returns"]["records"] == len(authorized)
    # A partial listing: the returns it did not see stay cached.
    assert _cached_ids(client, auth_headers, account) == all_returns


def test_a_job_lists_a_provider_path_through_the_proxy(
    client: TestClient, auth_headers: dict[str, str], redis_client: redis.Redis, upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    job = create_job(client, auth_headers, {
        "integration_name": "sandbox",
        "resources": [
            {"resource": "proxy/store/orders", "query": {"state": "SHIPPED"}},
            {"resource": "proxy/store/orders/{{parent.id}}", "method": "get",
             "depends_on": "proxy/store/orders"},
        ],
    })  # fmt: skip
    run_id = start_run(client, auth_headers, job["id"], upstream.account_id)
    work(redis_client)
    run = client.get(f"/v1/sync-job-run/{run_id}", headers=auth_headers).json()
    assert run["status"] == "completed", run
    shipped = sorted(k for k, o in upstream.data.orders.items() if o["state"] == "SHIPPED")
    stats = run["resource_stats"]
    assert stats["proxy/store/orders"]["records"] == len(shipped) > 0
    assert stats["proxy/store/orders/{{parent.id}}"] == {
        "pages": len(shipped), "records": len(shipped), "errors": 0}  # fmt: skip
    fetched = [r["path"] for r in upstream.state.seen("/store/orders/")]
    assert sorted(fetched) == [f"/store/orders/{key}" for key in shipped]
    listed = upstream.state.seen("/store/orders")
    assert all(r["query"].get("state") == "SHIPPED" for r in listed if r["path"] == "/store/orders")

    log = client.get("/v1/api-log", params={"integrated_account_id": upstream.account_id},
                     headers=auth_headers)  # fmt: skip
    assert log.status_code == 200, log.text
    assert any(e["path"].startswith("/proxy/store/orders/") for e in log.json()["result"])


@pytest.mark.parametrize(
    ("value", "path"),
    [("ord_1", "store/orders/ord_1/notes"),
     ("a/../../admin", "store/orders/a%2F..%2F..%2Fadmin/notes"),
     ("x?y=1#z", "store/orders/x%3Fy%3D1%23z/notes")],
)  # fmt: skip
def test_a_parent_value_fills_one_path_segment_only(value: str, path: str) -> None:
    assert bind_path("store/orders/{{parent.id}}/notes", {"id": value}) == path


def test_a_proxy_get_needs_no_parent_but_a_path_placeholder_does(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    one = {"resource": "proxy/store/orders/ord_5001", "method": "get"}
    single = {"integration_name": "sandbox", "resources": [one]}
    assert client.post("/v1/sync-job", json=single, headers=auth_headers).status_code == 201
    body: dict[str, Any] = {"integration_name": "sandbox", "resources": [
        {"resource": "proxy/store/orders/{{parent.id}}", "method": "get"}]}  # fmt: skip
    response = client.post("/v1/sync-job", json=body, headers=auth_headers)
    assert "depends_on" in assert_error(response, 400, "INVALID_REQUEST")["message"]
