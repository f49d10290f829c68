"""The API log of an account, and the proxy API's pass-through with normalized pages."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services.api_log_writer import flush_api_log
from platform_api.tables.api_log import ApiLogEntry
from tests.assertions import assert_error
from tests.platform_api.unified.helpers import walk_pages
from tests.platform_api.unified.providers import HUBSPOT, PIPEDRIVE, SHIPBOB, SHOPIFY

pytestmark = pytest.mark.db


def test_every_unified_and_proxy_call_is_logged_on_the_account(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SHIPBOB)
    params = {"integrated_account_id": upstream.account_id}
    ok = client.get("/v1/unified/wms/orders", params=params, headers=auth_headers)
    missing = client.get("/v1/unified/wms/orders/1", params=params, headers=auth_headers)
    mocked = client.get(
        "/v1/unified/wms/returns", params={**params, "skip_api_call": "true"}, headers=auth_headers
    )
    proxied = client.get("/v1/proxy/product", params=params, headers=auth_headers)
    assert [r.status_code for r in (ok, missing, mocked, proxied)] == [200, 404, 200, 200]

    log = client.get("/v1/api-log", params=params, headers=auth_headers).json()
    entries = log["result"]
    seen = [(e["kind"], e["method"], e["path"], e["status"], e["upstream_status"]) for e in entries]
    assert seen == [
        ("proxy", "GET", "/proxy/product", 200, 200),
        ("unified", "GET", "/unified/wms/returns", 200, None),
        ("unified", "GET", "/unified/wms/orders/1", 404, 404),
        ("unified", "GET", "/unified/wms/orders", 200, 200),
    ]  # fmt: skip
    assert [e["request_id"] for e in entries] == [
        r.headers["x-request-id"] for r in (proxied, mocked, missing, ok)
    ]
    assert entries[2]["error"] == "NOT_FOUND"
    assert all(e["duration_ms"] >= 0 for e in entries)


def test_api_log_pages_and_is_scoped_to_the_environment(
    client: TestClient, auth_headers: dict[str, str], make_token, upstream_for
) -> None:
    upstream = upstream_for(HUBSPOT)
    params = {"integrated_account_id": upstream.account_id, "skip_api_call": "true"}
    for _ in range(5):
        client.get("/v1/unified/crm/contacts", params=params, headers=auth_headers)
    pages = walk_pages(
        client, "/v1/api-log", auth_headers,
        {"integrated_account_id": upstream.account_id, "limit": 2},
    )  # fmt: skip
    assert [len(p) for p in pages] == [2, 2, 1]
    staging = {"Authorization": f"Bearer {make_token('staging')}"}
    other = client.get("/v1/api-log", params={"limit": 50}, headers=staging).json()
    assert other == {"result": [], "next_cursor": None}


def test_api_log_is_deleted_with_the_account(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(PIPEDRIVE)
    params = {"integrated_account_id": upstream.account_id}
    client.get("/v1/unified/crm/contacts", params=params, headers=auth_headers)
    flush_api_log(get_settings())  # rows are committed off the request path
    with session_scope(get_settings()) as session:
        count = sa.select(sa.func.count()).select_from(ApiLogEntry)
        assert session.execute(count).scalar_one() == 1
    response = client.delete(f"/v1/integrated-account/{upstream.account_id}", headers=auth_headers)
    assert response.status_code in (200, 204), response.text
    with session_scope(get_settings()) as session:
        assert session.execute(count).scalar_one() == 0


@pytest.mark.parametrize(
    ("provider", "path", "records"),
    [
        (HUBSPOT, "crm/v3/objects/contacts", lambda d: list(d["contacts"].values())),
        (PIPEDRIVE, "persons", lambda d: list(d["persons"].values())),
        (SHIPBOB, "order", lambda d: d["orders"]),
        (SHOPIFY, "products.json", lambda d: d["products"]),
    ],
    ids=lambda v: getattr(v, "integration", ""),
)
def test_proxy_normalizes_provider_pagination(
    client: TestClient, auth_headers: dict[str, str], upstream_for, provider, path, records
) -> None:
    upstream = upstream_for(provider)
    expected = records(upstream.data)
    limit = len(expected) // 3 + 1
    pages = walk_pages(
        client, f"/v1/proxy/{path}", auth_headers,
        {"integrated_account_id": upstream.account_id, "limit": limit},
    )  # fmt: skip
    assert len(pages) >= 3
    got = [r for page in pages for r in page]
    # Provider records pass through untouched (HubSpot trims properties to its defaults).
    assert [r["id"] for r in got] == [r["id"] for r in expected]
    if provider is not HUBSPOT:
        assert got == expected


def test_proxy_passes_query_body_and_credentials(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(HUBSPOT)
    params = {"integrated_account_id": upstream.account_id, "properties": "email,phone"}
    one = client.get("/v1/proxy/crm/v3/objects/contacts/105", params=params, headers=auth_headers)
    assert one.status_code == 200
    assert set(one.json()["properties"]) == {"email", "phone"}
    created = client.post(
        "/v1/proxy/crm/v3/objects/companies",
        params={"integrated_account_id": upstream.account_id},
        json={"properties": {"name": "Proxy Co"}},
        headers=auth_headers,
    )
    assert created.status_code == 201 and created.json()["properties"]["name"] == "Proxy Co"
    seen = upstream.state.requests
    assert all(r["headers"]["authorization"] == "Bearer pat-na1-fake" for r in seen)
    assert "integrated_account_id" not in seen[0]["query"]
    assert seen[0]["query"] == {"properties": "email,phone"}


def test_a_proxy_body_with_a_lone_surrogate_is_400_and_never_sent(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(HUBSPOT)
    response = client.post(
        "/v1/proxy/crm/v3/objects/companies",
        params={"integrated_account_id": upstream.account_id},
        content=b'{"properties": {"name": "\\ud800"}}',
        headers={**auth_headers, "content-type": "application/json"},
    )
    assert "surrogate" in assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert upstream.state.requests == []


def test_proxy_maps_provider_errors(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(PIPEDRIVE)
    response = client.get(
        "/v1/proxy/persons/424242",
        params={"integrated_account_id": upstream.account_id},
        headers=auth_headers,
    )
    assert assert_error(response, 404, "NOT_FOUND")["message"] == "Person not found"


def test_api_log_migration_matches_the_model(db: None) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    from platform_api.db import get_engine

    with get_engine(get_settings()).connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diffs = compare_metadata(context, SQLModel.metadata)
    flat = [d for diff in diffs for d in (diff if isinstance(diff, list) else [diff])]
    assert [d for d in flat if "api_log" in repr(d)] == []
