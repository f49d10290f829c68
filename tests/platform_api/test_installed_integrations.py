"""Installed integrations over HTTP: install, read, list, enable/disable, override masking."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import select

from core.settings import get_settings
from platform_api.db import get_engine, session_scope
from platform_api.services.installed_integrations import MASK, get_override
from platform_api.tables.installed_integration import InstalledIntegration
from tests.assertions import assert_error
from tests.platform_api.factories import (
    SHOPIFY_CREDENTIALS,
    bearer,
    connect,
    install,
    link_token,
    run_together,
)

pytestmark = pytest.mark.db

URL = "/v1/environment-integration"


def test_install_returns_the_record(client: TestClient, auth_headers: dict[str, str]) -> None:
    record = install(client, auth_headers, "hubspot")
    assert record["id"].startswith("eint_")
    assert record["integration"] == {"name": "hubspot", "label": "HubSpot", "category": "crm"}
    assert record["is_enabled"] is True
    assert record["created_at"].endswith("Z") and record["updated_at"].endswith("Z")
    assert client.get(f"{URL}/{record['id']}", headers=auth_headers).json() == record


def test_install_twice_is_a_conflict(client: TestClient, auth_headers: dict[str, str]) -> None:
    install(client, auth_headers, "shopify")
    again = client.post(URL, json={"integration_name": "shopify"}, headers=auth_headers)
    assert_error(again, 409, "CONFLICT")


def test_same_integration_installs_in_each_environment(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    first = install(client, bearer(make_token("development")), "shopify")
    second = install(client, bearer(make_token("production")), "shopify")
    assert first["id"] != second["id"]


@pytest.mark.parametrize(
    "body", [{"integration_name": "no_such_thing"}, {}, {"integration_name": "shopify", "x": 1}]
)
def test_install_rejects_bad_bodies(
    client: TestClient, auth_headers: dict[str, str], body: dict
) -> None:
    assert_error(client.post(URL, json=body, headers=auth_headers), 400, "INVALID_REQUEST")


def test_another_environments_installation_is_not_found(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    production = bearer(make_token("production"))
    staging = bearer(make_token("staging"))
    record = install(client, production, "shopify")
    for method in ("GET", "PATCH"):
        kwargs: dict[str, Any] = {"json": {"is_enabled": False}} if method == "PATCH" else {}
        foreign = client.request(method, f"{URL}/{record['id']}", headers=staging, **kwargs)
        missing = client.request(method, f"{URL}/eint_missing", headers=staging, **kwargs)
        assert_error(foreign, 404, "NOT_FOUND")
        assert_error(missing, 404, "NOT_FOUND")
        assert foreign.json()["message"].replace(record["id"], "X") == missing.json()[
            "message"
        ].replace("eint_missing", "X")
    assert client.get(URL, headers=staging).json() == {"result": [], "next_cursor": None}
    # The PATCH from staging changed nothing.
    assert client.get(f"{URL}/{record['id']}", headers=production).json()["is_enabled"] is True


def test_list_filters_by_integration_name(client: TestClient, auth_headers: dict[str, str]) -> None:
    install(client, auth_headers, "shopify")
    hubspot = install(client, auth_headers, "hubspot")
    body = client.get(URL, params={"integration.name": "hubspot"}, headers=auth_headers).json()
    assert body == {"result": [hubspot], "next_cursor": None}


def test_list_pages_stay_stable_when_installs_happen_between_pages(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    names = ["sandbox", "shopify", "hubspot", "pipedrive", "shipbob", "sandbox_crm"]
    created = [install(client, auth_headers, name)["id"] for name in names[:3]]
    first = client.get(URL, params={"limit": 2}, headers=auth_headers).json()
    assert [r["id"] for r in first["result"]] == sorted(created)[:2]
    created += [install(client, auth_headers, name)["id"] for name in names[3:]]
    rest = []
    cursor = first["next_cursor"]
    while cursor:
        page = client.get(
            URL, params={"limit": 2, "next_cursor": cursor}, headers=auth_headers
        ).json()
        rest += [r["id"] for r in page["result"]]
        cursor = page["next_cursor"]
    # Each installation exactly once; the later ones sort after the first page.
    assert [r["id"] for r in first["result"]] + rest == sorted(created)


def test_disable_and_enable(client: TestClient, auth_headers: dict[str, str]) -> None:
    record = install(client, auth_headers, "shopify")
    off = client.patch(f"{URL}/{record['id']}", json={"is_enabled": False}, headers=auth_headers)
    assert off.status_code == 200
    assert off.json()["is_enabled"] is False
    assert client.get(f"{URL}/{record['id']}", headers=auth_headers).json()["is_enabled"] is False
    on = client.patch(f"{URL}/{record['id']}", json={"is_enabled": True}, headers=auth_headers)
    assert on.json()["is_enabled"] is True


def test_oauth_client_secret_is_masked_and_encrypted_at_rest(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    record = install(client, auth_headers, "hubspot")
    secret = "hubspot-client-secret-4242"
    override = {
        "oauth": {"client_id": "cid", "client_secret": secret, "scopes": ["oauth", "crm.x"]},
        "portal_region": "eu1",
    }
    response = client.patch(
        f"{URL}/{record['id']}", json={"override": override}, headers=auth_headers
    )
    assert response.status_code == 200
    expected = {
        "oauth": {"client_id": "cid", "client_secret": MASK, "scopes": ["oauth", "crm.x"]},
        "portal_region": "eu1",
    }
    assert response.json()["override"] == expected
    for body in (
        client.get(f"{URL}/{record['id']}", headers=auth_headers).text,
        client.get(URL, headers=auth_headers).text,
        response.text,
    ):
        assert secret not in body
    with get_engine(get_settings()).connect() as connection:
        raw = connection.execute(
            sa.text("SELECT override_encrypted FROM installed_integration")
        ).scalar_one()
    assert secret not in raw and "cid" not in raw
    with session_scope(get_settings()) as session:
        installed = session.get(InstalledIntegration, record["id"])
        assert installed is not None
        stored = get_override(installed, get_settings())
    assert stored["oauth"]["client_secret"] == secret


def test_override_merges_and_sending_the_mask_back_keeps_the_secret(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    record = install(client, auth_headers, "hubspot")
    url = f"{URL}/{record['id']}"
    client.patch(
        url,
        json={"override": {"oauth": {"client_id": "a", "client_secret": "s3"}, "form": 1}},
        headers=auth_headers,
    )
    # A client echoing the record it read back must not overwrite the secret with the mask.
    shown = client.get(url, headers=auth_headers).json()["override"]
    shown["oauth"]["scopes"] = ["oauth"]
    shown["form"] = None
    client.patch(url, json={"override": shown}, headers=auth_headers)
    with session_scope(get_settings()) as session:
        installed = session.get(InstalledIntegration, record["id"])
        assert installed is not None
        stored = get_override(installed, get_settings())
    assert stored == {"oauth": {"client_id": "a", "client_secret": "s3", "scopes": ["oauth"]}}
    cleared = client.patch(url, json={"override": {"oauth": None}}, headers=auth_headers)
    assert cleared.json()["override"] == {}


@pytest.mark.parametrize(
    "body",
    [
        {"override": {"oauth": {"client_key": "x"}}},
        {"override": {"oauth": {"scopes": "not-a-list"}}},
        {"override": {"oauth": {"scopes": [1, 2]}}},
        {"override": {"oauth": "text"}},
        {"override": []},
        {"is_enabled": "maybe"},
        {"name": "x"},
    ],
)
def test_patch_rejects_malformed_overrides(
    client: TestClient, auth_headers: dict[str, str], body: dict
) -> None:
    record = install(client, auth_headers, "hubspot")
    response = client.patch(f"{URL}/{record['id']}", json=body, headers=auth_headers)
    assert_error(response, 400, "INVALID_REQUEST")


def test_disabled_integration_cannot_be_connected(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    record = install(client, auth_headers, "shopify")
    install(client, auth_headers, "pipedrive")
    token = link_token(client, auth_headers, tenant_id="t1")
    client.patch(f"{URL}/{record['id']}", json={"is_enabled": False}, headers=auth_headers)
    refused = client.post(
        "/v1/link-token",
        json={"tenant_id": "t1", "integration_name": "shopify"},
        headers=auth_headers,
    )
    assert_error(refused, 403, "INTEGRATION_DISABLED")
    offered = client.get("/connect-account/session", params={"link_token": token}).json()
    assert [i["name"] for i in offered["integrations"]] == ["pipedrive"]
    post = client.post(
        "/connect-account/session",
        json={
            "link_token": token,
            "integration_name": "shopify",
            "credentials": SHOPIFY_CREDENTIALS,
        },
    )
    assert_error(post, 403, "INTEGRATION_DISABLED")
    # The refusal did not spend the token: another integration still connects with it.
    ok = client.post(
        "/connect-account/session",
        json={
            "link_token": token,
            "integration_name": "pipedrive",
            "credentials": {"api_token": "p"},
        },
    )
    assert ok.status_code == 201


def test_disabling_refuses_reauthorization_of_existing_accounts(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    record = install(client, auth_headers, "shopify")
    account_id = connect(client, auth_headers)
    client.patch(f"{URL}/{record['id']}", json={"is_enabled": False}, headers=auth_headers)
    response = client.post(
        "/v1/link-token", json={"integrated_account_id": account_id}, headers=auth_headers
    )
    assert_error(response, 403, "INTEGRATION_DISABLED")


def test_endpoints_require_an_api_token(client: TestClient) -> None:
    assert_error(client.get(URL), 401, "UNAUTHORIZED")
    assert_error(client.post(URL, json={"integration_name": "shopify"}), 401, "UNAUTHORIZED")
    assert_error(client.patch(f"{URL}/eint_x", json={}), 401, "UNAUTHORIZED")


def test_list_rejects_limits_out_of_range(client: TestClient, auth_headers: dict[str, str]) -> None:
    install(client, auth_headers, "shopify")
    assert len(client.get(URL, params={"limit": 200}, headers=auth_headers).json()["result"]) == 1
    for limit in ("0", "201", "-1", "ten"):
        response = client.get(URL, params={"limit": limit}, headers=auth_headers)
        assert_error(response, 400, "INVALID_REQUEST")


def test_concurrent_installs_of_one_integration_yield_one_conflict(
    live_server: str, make_token: Callable[..., str]
) -> None:
    headers = bearer(make_token("development"))
    names = ["shopify", "hubspot", "pipedrive"]
    with httpx.Client(base_url=live_server, timeout=30) as http:
        for name in names:

            def install_once(name: str = name) -> int:
                body = {"integration_name": name}
                return http.post(URL, json=body, headers=headers).status_code

            assert sorted(run_together(install_once)) == [201, 409], name
    with session_scope(get_settings()) as session:
        rows = session.exec(select(InstalledIntegration)).all()
    assert sorted(r.integration_name for r in rows) == sorted(names)
