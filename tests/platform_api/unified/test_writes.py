"""Create, update and delete through the unified CRM resources, checked in the provider."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from platform_api.unified.schemas import validate_record
from tests.assertions import assert_error
from tests.platform_api.unified.conftest import Upstream
from tests.platform_api.unified.providers import HUBSPOT, PIPEDRIVE, SANDBOX_CRM

pytestmark = pytest.mark.db


def _stored(upstream: Upstream, resource: str, record_id: str) -> dict[str, Any] | None:
    """The record as the provider holds it, flattened to comparable fields."""
    name = upstream.provider.integration
    if name == "hubspot":
        row = upstream.data[resource].get(record_id)
        return row and row["properties"]
    if name == "pipedrive":
        kind = "persons" if resource == "contacts" else "organizations"
        row = upstream.data[kind].get(int(record_id))
        if row is None:
            return None
        emails = [e["value"] for e in row.get("email", [])]
        return {"name": row["name"], "email": emails[0] if emails else None,
                "city": row.get("address_locality")}  # fmt: skip
    return getattr(upstream.data, resource).get(record_id)


CASES = {
    "contacts": (
        {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.com",
         "phone": "+44 20 7946 0000"},
        {"email": "ada.l@example.com"},
        {"hubspot": ("email", "ada.l@example.com"), "pipedrive": ("email", "ada.l@example.com"),
         "sandbox_crm": ("email", "ada.l@example.com")},
    ),
    "companies": (
        {"name": "Analytical Engines", "domain": "engines.example", "city": "London",
         "country": "GB"},
        {"name": "Analytical Engines Ltd"},
        {"hubspot": ("name", "Analytical Engines Ltd"),
         "pipedrive": ("name", "Analytical Engines Ltd"),
         "sandbox_crm": ("name", "Analytical Engines Ltd")},
    ),
}  # fmt: skip


@pytest.mark.parametrize("resource", ["contacts", "companies"])
@pytest.mark.parametrize("provider", [HUBSPOT, PIPEDRIVE, SANDBOX_CRM], ids=lambda p: p.integration)
def test_create_update_delete_round_trip(
    client: TestClient, auth_headers: dict[str, str], upstream_for, provider, resource: str
) -> None:
    upstream = upstream_for(provider)
    create_body, update_body, expected = CASES[resource]
    field, value = expected[provider.integration]
    params = {"integrated_account_id": upstream.account_id}
    url = f"/v1/unified/crm/{resource}"

    created = client.post(url, params=params, json=create_body, headers=auth_headers)
    assert created.status_code == 201, created.text
    record = created.json()
    assert validate_record("crm", resource, record) == record
    for key in ("first_name", "last_name", "email", "name", "city"):
        if key in create_body and (provider is not PIPEDRIVE or key != "city"):
            assert record[key] == create_body[key]
    assert _stored(upstream, resource, record["id"]) is not None

    fetched = client.get(f"{url}/{record['id']}", params=params, headers=auth_headers)
    assert fetched.json() == record

    updated = client.patch(
        f"{url}/{record['id']}", params=params, json=update_body, headers=auth_headers
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()[next(iter(update_body))] == next(iter(update_body.values()))
    provider_field = {"hubspot": {"name": "name", "email": "email"}}.get(
        provider.integration, {}
    ).get(field, field)
    stored = _stored(upstream, resource, record["id"])
    assert stored is not None
    assert stored[provider_field] == value
    untouched = "last_name" if resource == "contacts" else "name"
    if untouched not in update_body:
        assert updated.json()[untouched] == record[untouched]

    deleted = client.delete(f"{url}/{record['id']}", params=params, headers=auth_headers)
    assert deleted.status_code == 204 and deleted.content == b""
    assert _stored(upstream, resource, record["id"]) is None
    gone = client.get(f"{url}/{record['id']}", params=params, headers=auth_headers)
    assert_error(gone, 404, "NOT_FOUND")


def test_invalid_unified_body_is_refused_before_the_call(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(HUBSPOT)
    response = client.post(
        "/v1/unified/crm/contacts",
        params={"integrated_account_id": upstream.account_id},
        json={"email": "x@example.com", "favourite_colour": "teal"},
        headers=auth_headers,
    )
    assert "favourite_colour" in assert_error(response, 400, "INVALID_REQUEST")["message"]
    assert upstream.state.requests == []


def test_provider_conflict_is_conflict(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(HUBSPOT)
    response = client.post(
        "/v1/unified/crm/contacts",
        params={"integrated_account_id": upstream.account_id},
        json={"email": "person1@example.com"},
        headers=auth_headers,
    )
    assert "already exists" in assert_error(response, 409, "CONFLICT")["message"]
