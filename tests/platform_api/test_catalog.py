"""The integration catalog: every manifest validates, broken ones fail loudly, and the
base URL and auth of an account are derived from the manifest alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from core.errors import ApiError
from core.settings import Settings
from platform_api.integrations.catalog import (
    PROVIDERS_DIR,
    CatalogError,
    get_catalog,
    load_catalog,
    load_manifest,
)
from platform_api.integrations.provider_access import (
    MissingValueError,
    auth_parts,
    resolve_base_url,
)
from platform_api.services.connect_flow import check_credentials
from tests.assertions import assert_error
from tests.platform_api.factories import collect_pages

PROVIDERS = sorted(p.name for p in PROVIDERS_DIR.iterdir() if p.is_dir())


def _sample_credentials(name: str) -> dict[str, str]:
    manifest = get_catalog()[name]
    if not manifest.auth.fields:  # OAuth only: the token response is the credential
        return {"access_token": "value-of-access_token"}
    return {f.name: f"value-of-{f.name}" for f in manifest.auth.fields}


@pytest.mark.parametrize("name", PROVIDERS)
def test_every_manifest_loads_and_drives_a_request(name: str) -> None:
    manifest = load_manifest(PROVIDERS_DIR / name)
    assert manifest.name == name
    assert manifest.category in {"wms", "crm"}
    credentials = _sample_credentials(name)
    url = resolve_base_url(
        manifest, credentials=credentials, settings=Settings(sandbox_url="http://up")
    )
    assert url.startswith(("http://", "https://"))
    assert "{" not in url
    parts = auth_parts(manifest, credentials)
    sent = [*parts.headers.values(), *parts.query.values()]
    # The secret credential reaches the upstream request somewhere.
    secret_fields = [f.name for f in manifest.auth.fields if f.secret] or ["access_token"]
    assert any(credentials[field] in value for field in secret_fields for value in sent)


def test_catalog_has_the_required_providers() -> None:
    catalog = get_catalog()
    assert {"sandbox", "sandbox_crm", "shopify", "shipbob", "hubspot", "pipedrive"} <= set(catalog)
    assert catalog["sandbox"].category == "wms"
    assert catalog["sandbox_crm"].category == "crm"
    assert catalog["hubspot"].auth.oauth2 is not None
    assert catalog["hubspot"].auth.oauth2.default_scopes


def _write(folder: Path, manifest: dict | str) -> Path:
    folder.mkdir(parents=True)
    text = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest)
    (folder / "integration.yaml").write_text(text)
    return folder


VALID: dict[str, Any] = {
    "name": "acme",
    "label": "Acme",
    "category": "wms",
    "base_url": "https://{region}.acme.test/api",
    "auth": {
        "scheme": "api_key",
        "fields": [{"name": "key", "label": "Key"}],
        "apply": {"headers": {"X-Key": "{key}"}},
    },
}


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"colour": "red"}, "colour"),
        ({"auth": {**VALID["auth"], "apply": {"headers": {"X-Key": "{nope}"}}}}, "nope"),
        ({"auth": {"scheme": "oauth2", "fields": []}}, "auth.oauth2 is required"),
        ({"auth": {**VALID["auth"], "scheme": "basic"}}, "auth.apply.basic"),
        ({"name": "other"}, "differs from its folder"),
        ({"category": None}, "category"),
    ],
    ids=["unknown-key", "undeclared-placeholder", "oauth2-without-urls", "basic-without-apply",
         "name-mismatch", "missing-category"],
)  # fmt: skip
def test_broken_manifest_fails_naming_its_path(
    tmp_path: Path, change: dict, complaint: str
) -> None:
    folder = _write(tmp_path / "acme", {**VALID, **change})
    with pytest.raises(CatalogError) as excinfo:
        load_catalog(tmp_path)
    assert str(folder / "integration.yaml") in str(excinfo.value)
    assert complaint in str(excinfo.value)


def test_unparseable_yaml_fails_naming_its_path(tmp_path: Path) -> None:
    folder = _write(tmp_path / "acme", "name: [unclosed")
    with pytest.raises(CatalogError, match=str(folder / "integration.yaml")):
        load_catalog(tmp_path)


def test_resources_yaml_is_exposed_raw(tmp_path: Path) -> None:
    folder = _write(tmp_path / "acme", VALID)
    (folder / "resources.yaml").write_text("orders:\n  list: {path: /orders}\n")
    manifest = load_catalog(tmp_path)["acme"]
    assert manifest.resources == {"orders": {"list": {"path": "/orders"}}}
    assert manifest.directory == folder


def test_base_url_placeholders_come_from_context_and_override_wins(tmp_path: Path) -> None:
    manifest = load_manifest(_write(tmp_path / "acme", VALID))
    settings = Settings()
    context = {"region": "eu"}
    url = resolve_base_url(manifest, credentials={"key": "k"}, context=context, settings=settings)
    assert url == "https://eu.acme.test/api"
    override = {"base_url": "http://127.0.0.1:9999/fake/"}
    assert (
        resolve_base_url(manifest, credentials={"key": "k"}, override=override, settings=settings)
        == "http://127.0.0.1:9999/fake"
    )
    with pytest.raises(MissingValueError, match="region"):
        resolve_base_url(manifest, credentials={"key": "k"}, settings=settings)


def test_sandbox_base_url_comes_from_the_sandbox_url_setting() -> None:
    sandbox = get_catalog()["sandbox"]
    url = resolve_base_url(
        sandbox, credentials={"api_key": "k"}, settings=Settings(sandbox_url="http://sb:1/x/")
    )
    assert url == "http://sb:1/x"
    # Unset: whatever default the settings resolve to (the sandbox process of `switchyard run`).
    unset = Settings(sandbox_url=None)
    default = resolve_base_url(sandbox, credentials={"api_key": "k"}, settings=unset)
    assert default == unset.resolved_sandbox_url.rstrip("/")


def test_shopify_base_url_uses_the_shop_credential() -> None:
    shopify = get_catalog()["shopify"]
    url = resolve_base_url(
        shopify, credentials={"shop": "acme", "access_token": "t"}, settings=Settings()
    )
    assert url == "https://acme.myshopify.com/admin/api/2025-01"
    assert auth_parts(shopify, {"shop": "acme", "access_token": "t"}).headers == {
        "X-Shopify-Access-Token": "t"
    }


def test_pipedrive_api_token_goes_in_the_query_and_oauth_token_in_a_header() -> None:
    pipedrive = get_catalog()["pipedrive"]
    by_key = auth_parts(pipedrive, {"api_token": "abc"})
    assert by_key.query == {"api_token": "abc"} and by_key.headers == {}
    by_oauth = auth_parts(pipedrive, {"access_token": "xyz", "refresh_token": "r"})
    assert by_oauth.headers == {"Authorization": "Bearer xyz"} and by_oauth.query == {}


def test_basic_scheme_yields_username_and_password(tmp_path: Path) -> None:
    manifest = {
        **VALID,
        "auth": {
            "scheme": "basic",
            "fields": [{"name": "user", "label": "User", "secret": False},
                       {"name": "password", "label": "Password"}],
            "apply": {"basic": {"username": "{user}", "password": "{password}"}},
        },
    }  # fmt: skip
    loaded = load_manifest(_write(tmp_path / "acme", manifest))
    assert auth_parts(loaded, {"user": "u", "password": "p"}).basic == ("u", "p")


@pytest.mark.db
def test_catalog_endpoint_lists_every_integration_in_pages(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    items = collect_pages(client, "/v1/integration", auth_headers, limit=2)
    assert [i["name"] for i in items] == sorted(get_catalog())
    shopify = next(i for i in items if i["name"] == "shopify")
    assert shopify == {
        "name": "shopify",
        "label": "Shopify",
        "category": "wms",
        "auth_scheme": "api_key",
        "supports_oauth2": False,
    }
    crm = client.get("/v1/integration", params={"category": "crm"}, headers=auth_headers).json()
    assert {i["name"] for i in crm["result"]} == {"hubspot", "pipedrive", "sandbox_crm"}


@pytest.mark.db
def test_catalog_endpoint_rejects_bad_cursor_and_needs_a_token(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    first = client.get("/v1/integration", params={"limit": 1}, headers=auth_headers).json()
    other_list = client.get(
        "/v1/integration",
        params={"limit": 1, "category": "crm", "next_cursor": first["next_cursor"]},
        headers=auth_headers,
    )
    assert_error(other_list, 400, "INVALID_REQUEST")
    tampered = first["next_cursor"][:-2] + ("AA" if first["next_cursor"][-2:] != "AA" else "BB")
    response = client.get("/v1/integration", params={"next_cursor": tampered}, headers=auth_headers)
    assert_error(response, 400, "INVALID_REQUEST")
    assert_error(client.get("/v1/integration"), 401, "UNAUTHORIZED")


def test_oauth_obtained_credentials_are_accepted_only_where_oauth_is_offered() -> None:
    pipedrive, sandbox = get_catalog()["pipedrive"], get_catalog()["sandbox"]
    tokens = {"access_token": "a", "refresh_token": "r"}
    assert check_credentials(pipedrive, tokens, via_oauth=True) == tokens
    with pytest.raises(ApiError, match="api_token"):
        check_credentials(pipedrive, tokens)  # pasted credentials need the API token
    with pytest.raises(ApiError, match="access_token"):
        check_credentials(sandbox, tokens, via_oauth=True)
