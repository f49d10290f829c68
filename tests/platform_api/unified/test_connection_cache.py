"""A process reuses an account's resolved connection, and never past a change to it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services import accounts, provider_connection_cache
from platform_api.services.installed_integrations import find_installed
from tests.assertions import assert_error
from tests.platform_api.unified.conftest import Upstream
from tests.platform_api.unified.providers import SHIPBOB

pytestmark = pytest.mark.db


def _token_sent(upstream: Upstream) -> str:
    return upstream.state.requests[-1]["headers"]["authorization"]


def test_new_credentials_are_used_by_the_next_call(
    client: TestClient, auth_headers: dict[str, str], settings: Settings, upstream_for
) -> None:
    upstream = upstream_for(SHIPBOB)
    params = {"integrated_account_id": upstream.account_id}

    def reauthorize(token: str) -> None:
        with session_scope(settings) as session:
            account = accounts.get_account(
                session, environment_id="development", integrated_account_id=upstream.account_id
            )
            accounts.reauthorize(
                session, account=account, credentials={"access_token": token}, settings=settings
            )

    def call() -> int:
        return client.get("/v1/unified/wms/orders", params=params, headers=auth_headers).status_code

    assert call() == 200  # cached now
    reauthorize("a-token-the-provider-refuses")
    assert call() == 401  # the cached, working credentials were not used
    reauthorize(upstream.provider.credentials["access_token"])
    assert call() == 200
    assert _token_sent(upstream) == f"Bearer {upstream.provider.credentials['access_token']}"


def test_disabling_the_integration_applies_to_the_next_call(
    client: TestClient, auth_headers: dict[str, str], settings: Settings, upstream_for
) -> None:
    upstream = upstream_for(SHIPBOB)
    params = {"integrated_account_id": upstream.account_id}
    assert client.get("/v1/unified/wms/orders", params=params, headers=auth_headers).is_success
    with session_scope(settings) as session:
        row = find_installed(session, environment_id="development", integration_name="shipbob")
        assert row is not None
        installed_id = row.id
    response = client.patch(
        f"/v1/environment-integration/{installed_id}",
        json={"is_enabled": False},
        headers=auth_headers,
    )
    assert response.is_success, response.text
    refused = client.get("/v1/unified/wms/orders", params=params, headers=auth_headers)
    assert refused.status_code == 403


def test_deleted_account_is_not_served_from_the_cache(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SHIPBOB)
    params = {"integrated_account_id": upstream.account_id}
    assert client.get("/v1/unified/wms/orders", params=params, headers=auth_headers).is_success
    deleted = client.delete(f"/v1/integrated-account/{upstream.account_id}", headers=auth_headers)
    assert deleted.status_code == 204
    assert_error(
        client.get("/v1/unified/wms/orders", params=params, headers=auth_headers), 404, "NOT_FOUND"
    )


def test_repeated_calls_reuse_the_connection(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SHIPBOB)
    params = {"integrated_account_id": upstream.account_id}
    client.get("/v1/unified/wms/orders", params=params, headers=auth_headers)
    cached, _ = provider_connection_cache.lookup("development", upstream.account_id)
    assert cached is not None and cached.integrated_account_id == upstream.account_id
    client.get("/v1/unified/wms/orders", params=params, headers=auth_headers)
    assert provider_connection_cache.lookup("development", upstream.account_id)[0] is cached


def test_a_lookup_older_than_a_change_is_not_stored() -> None:
    _, generation = provider_connection_cache.lookup("development", "acct_racing")
    # A change commits meanwhile.
    provider_connection_cache.invalidate(integrated_account_id="acct_racing")
    stale = object()
    provider_connection_cache.store(
        "development",
        "acct_racing",
        stale,  # type: ignore[arg-type]  # a sentinel: the test needs only its identity
        generation=generation,
        ttl_s=60,
    )
    assert provider_connection_cache.lookup("development", "acct_racing")[0] is None
