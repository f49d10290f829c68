"""`switchyard integrations`: catalog, install, list, enable and disable on the real database."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from switchyard.cli import app as cli
from tests.assertions import assert_error

pytestmark = pytest.mark.db

runner = CliRunner()


def test_catalog_lists_every_integration() -> None:
    result = runner.invoke(cli, ["integrations", "catalog"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name in ("sandbox", "sandbox_crm", "shopify", "shipbob", "hubspot", "pipedrive"):
        assert name in result.output


def test_install_then_list_and_the_api_sees_it(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    result = runner.invoke(
        cli, ["integrations", "install", "shopify", "--environment", "development"]
    )
    assert result.exit_code == 0, result.output
    assert "installed shopify in development as eint_" in result.output
    listed = runner.invoke(
        cli, ["integrations", "list", "--environment", "development"], terminal_width=200
    )
    assert "shopify" in listed.output and "yes" in listed.output
    records = client.get("/v1/environment-integration", headers=auth_headers).json()["result"]
    assert [r["integration"]["name"] for r in records] == ["shopify"]
    other = runner.invoke(cli, ["integrations", "list", "--environment", "staging"])
    assert "shopify" not in other.output


def test_install_twice_or_unknown_fails_with_a_message(db: None) -> None:
    args = ["integrations", "install", "hubspot", "--environment", "production"]
    assert runner.invoke(cli, args).exit_code == 0
    again = runner.invoke(cli, args)
    assert again.exit_code == 1
    assert "already installed" in again.output
    unknown = runner.invoke(cli, ["integrations", "install", "nope", "--environment", "production"])
    assert unknown.exit_code == 1 and "nope" in unknown.output
    bad_env = runner.invoke(cli, ["integrations", "install", "hubspot", "--environment", "prod"])
    assert bad_env.exit_code == 2


def test_disable_and_enable_take_effect_in_the_api(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    runner.invoke(cli, ["integrations", "install", "shopify"])
    disabled = runner.invoke(cli, ["integrations", "disable", "shopify"])
    assert disabled.exit_code == 0, disabled.output
    refused = client.post(
        "/v1/link-token",
        json={"tenant_id": "t", "integration_name": "shopify"},
        headers=auth_headers,
    )
    assert_error(refused, 403, "INTEGRATION_DISABLED")
    assert runner.invoke(cli, ["integrations", "enable", "shopify"]).exit_code == 0
    accepted = client.post(
        "/v1/link-token",
        json={"tenant_id": "t", "integration_name": "shopify"},
        headers=auth_headers,
    )
    assert accepted.status_code == 201
    missing = runner.invoke(cli, ["integrations", "enable", "hubspot"])
    assert missing.exit_code == 1 and "not installed" in missing.output
