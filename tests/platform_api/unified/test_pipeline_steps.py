"""skip_api_call, static mappings, before-steps and after-steps, as a caller sees them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from platform_api.unified.resource_map import get_resources
from platform_api.unified.schemas import validate_record
from tests.assertions import assert_error
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import (
    HUBSPOT,
    PIPEDRIVE,
    PROVIDERS,
    SANDBOX,
    SHOPIFY,
    shopify_order_status,
)

pytestmark = pytest.mark.db

READS = [pytest.param(p, r, id=f"{p.integration}-{r}") for p in PROVIDERS for r in p.resources]


@pytest.mark.parametrize(("provider", "resource"), READS)
def test_skip_api_call_returns_mock_data_without_calling(
    client: TestClient, auth_headers: dict[str, str], upstream_for, provider, resource
) -> None:
    upstream = upstream_for(provider)
    resource_map = get_resources(provider.integration)
    assert resource_map is not None
    mock = [
        validate_record(provider.category, resource, m)
        for m in resource_map.resources[resource].mock
    ]
    url = f"/v1/unified/{provider.category}/{resource}"
    params = {"integrated_account_id": upstream.account_id, "skip_api_call": "true"}
    listed = client.get(url, params=params, headers=auth_headers)
    assert listed.status_code == 200, listed.text
    assert listed.json() == {"result": mock, "next_cursor": None}
    one = client.get(f"{url}/{mock[0]['id']}", params=params, headers=auth_headers)
    assert one.json() == mock[0]
    assert upstream.state.requests == []


def test_skip_api_call_on_writes_makes_no_call(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(PIPEDRIVE)
    params = {"integrated_account_id": upstream.account_id, "skip_api_call": "true"}
    created = client.post(
        "/v1/unified/crm/contacts", params=params, json={"email": "a@example.com"},
        headers=auth_headers,
    )  # fmt: skip
    assert created.status_code == 201
    deleted = client.delete("/v1/unified/crm/contacts/1", params=params, headers=auth_headers)
    assert deleted.status_code == 204
    assert upstream.state.requests == []
    assert 1 in upstream.data["persons"]


@pytest.mark.parametrize("provider", [SANDBOX, SHOPIFY], ids=lambda p: p.integration)
def test_static_mapping_answers_without_calling(
    client: TestClient, auth_headers: dict[str, str], upstream_for, provider
) -> None:
    upstream = upstream_for(provider)
    response = client.get(
        "/v1/unified/wms/return_reasons",
        params={"integrated_account_id": upstream.account_id},
        headers=auth_headers,
    )
    assert response.status_code == 200, response.text
    reasons = response.json()["result"]
    assert {"id": "defective", "label": "Defective"} in reasons or {
        "id": "damaged",
        "label": "Arrived damaged",
    } in reasons
    assert all(r["id"] == r["id"].lower() for r in reasons)
    assert upstream.state.requests == []


def test_before_step_validation_stops_the_call(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    response = client.get(
        "/v1/unified/wms/returns",
        params={"integrated_account_id": upstream.account_id, "status": "lost"},
        headers=auth_headers,
    )
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert body["message"].startswith("status: must be one of requested, open")
    assert upstream.state.requests == []


def test_query_mapping_turns_unified_status_into_provider_state(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    response = client.get(
        "/v1/unified/wms/returns",
        params={"integrated_account_id": upstream.account_id, "status": "open", "limit": 100},
        headers=auth_headers,
    )
    result = response.json()["result"]
    expected = [r["id"] for r in upstream.data.returns.values() if r["state"] == "AUTHORIZED"]
    assert [r["id"] for r in result] == expected and expected
    assert all(r["status"] == "open" for r in result)
    assert upstream.state.seen("/store/returns")[0]["query"]["state"] == "AUTHORIZED"


def test_after_steps_enrich_records_with_one_extra_call(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    response = client.get(
        "/v1/unified/wms/returns",
        params={"integrated_account_id": upstream.account_id, "limit": 10},
        headers=auth_headers,
    )
    records = response.json()["result"]
    product_ids = {i["product_id"] for r in records for i in r["line_items"]}
    for item in (i for r in records for i in r["line_items"]):
        assert item["sku"] == upstream.data.products[item["product_id"]]["sku"]
    lookups = upstream.state.seen("/store/products")
    assert len(lookups) == 1
    assert set(lookups[0]["query"]["ids"].split(",")) == product_ids


def test_before_step_fetch_feeds_the_body_mapping(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    # Pipedrive keeps one `name`; changing the last name alone must keep the first name.
    upstream = upstream_for(PIPEDRIVE)
    response = client.patch(
        "/v1/unified/crm/contacts/4",
        params={"integrated_account_id": upstream.account_id},
        json={"last_name": "Newname"},
        headers=auth_headers,
    )
    assert response.status_code == 200, response.text
    assert (response.json()["first_name"], response.json()["last_name"]) == ("Given3", "Newname")
    assert upstream.data["persons"][4]["name"] == "Given3 Newname"
    assert [(r["method"], r["path"]) for r in upstream.state.requests] == [
        ("GET", "/persons/4"),
        ("PUT", "/persons/4"),
    ]


def test_openapi_documents_each_unified_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name in ("Order", "Return", "Product", "Contact", "Company", "ContactInput",
                 "OrderInput", "ReturnInput", "ProductInput"):  # fmt: skip
        assert name in schemas
    assert "refund_amount" in schemas["Return"]["properties"]
    listing = spec["paths"]["/v1/unified/wms/returns"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {
        "integrated_account_id", "limit", "next_cursor", "skip_api_call", "status",
    }  # fmt: skip
    ok = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ok.endswith("/ReturnPage")
    assert "post" in spec["paths"]["/v1/unified/crm/contacts"]
    orders = spec["paths"]["/v1/unified/wms/orders"]
    body = orders["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/OrderInput")
    assert "post" not in spec["paths"]["/v1/unified/wms/return_reasons"]


@pytest.mark.parametrize("status", ["processing", "pending", "fulfilled", "cancelled"])
def test_status_filter_returns_exactly_the_matching_records(
    client: TestClient, auth_headers: dict[str, str], upstream_for, status: str
) -> None:
    # Shopify's search cannot say "unshipped and not pending payment": an after-step filter
    # removes what the provider's closest query lets through.
    upstream = upstream_for(SHOPIFY)
    pages = walk_pages(
        client, "/v1/unified/wms/orders", auth_headers,
        {"integrated_account_id": upstream.account_id, "limit": 20, "status": status},
    )  # fmt: skip
    got = [r for page in pages for r in page]
    expected = [str(o["id"]) for o in upstream.data["orders"] if shopify_order_status(o) == status]
    assert got and [r["id"] for r in got] == expected
    assert all(r["status"] == status for r in got)


def test_unsupported_method_is_method_not_allowed(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    # No integration writes return reasons (static data).
    response = client.post("/v1/unified/wms/return_reasons", json={}, headers=auth_headers)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


def test_cursor_is_bound_to_its_list_and_cannot_be_forged(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SANDBOX)
    params = {"integrated_account_id": upstream.account_id, "limit": 5, "status": "open"}
    first = client.get("/v1/unified/wms/returns", params=params, headers=auth_headers).json()
    cursor = first["next_cursor"]
    other_filter = {**params, "status": "completed", "next_cursor": cursor}
    response = client.get("/v1/unified/wms/returns", params=other_filter, headers=auth_headers)
    assert_error(response, 400, "INVALID_REQUEST")
    forged = {**params, "next_cursor": cursor[:-3] + ("AAA" if cursor[-3:] != "AAA" else "BBB")}
    response = client.get("/v1/unified/wms/returns", params=forged, headers=auth_headers)
    assert_error(response, 400, "INVALID_REQUEST")


def test_limit_above_the_provider_maximum_is_capped(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(HUBSPOT)
    response = client.get(
        "/v1/unified/crm/contacts",
        params={"integrated_account_id": upstream.account_id, "limit": 200},
        headers=auth_headers,
    )
    body = response.json()
    assert len(body["result"]) == 100 and body["next_cursor"]
    assert upstream.state.requests[0]["query"]["limit"] == "100"
