"""Provider failures become the standard error body; refused credentials flag the account."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from sqlmodel import select

from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.outbox import OutboxEvent
from tests.assertions import assert_error
from tests.conftest import free_port
from tests.platform_api.unified.conftest import Upstream
from tests.platform_api.unified.fakes.common import Scripted
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.unified.providers import (
    HUBSPOT,
    PIPEDRIVE,
    PROVIDERS,
    SHIPBOB,
    SHOPIFY,
)

pytestmark = pytest.mark.db


def _get(
    client: TestClient,
    headers: dict[str, str],
    upstream: Upstream,
    resource: str,
    **params: str | int,
) -> Response:
    category = upstream.provider.category
    return client.get(
        f"/v1/unified/{category}/{resource}",
        params={"integrated_account_id": upstream.account_id, **params},
        headers=headers,
    )


def test_provider_validation_error_keeps_its_message(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SHOPIFY)
    upstream.state.fail_next.append(Scripted(422, {"errors": {"title": ["can't be blank"]}}))
    body = assert_error(_get(client, auth_headers, upstream, "orders"), 400, "INVALID_REQUEST")
    assert body["message"] == "title can't be blank"


def test_provider_400_from_a_real_refusal_is_invalid_request(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    # Pipedrive refuses a person without a name with its own error body.
    upstream = upstream_for(PIPEDRIVE)
    response = client.post(
        "/v1/unified/crm/contacts",
        params={"integrated_account_id": upstream.account_id},
        json={"email": "nameless@example.com"},
        headers=auth_headers,
    )
    assert assert_error(response, 400, "INVALID_REQUEST")["message"] == "Name must be given."


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.integration)
def test_unknown_record_is_not_found(
    client: TestClient, auth_headers: dict[str, str], upstream_for, provider
) -> None:
    upstream = upstream_for(provider)
    resource = provider.resources[0]
    response = client.get(
        f"/v1/unified/{provider.category}/{resource}/999999999",
        params={"integrated_account_id": upstream.account_id},
        headers=auth_headers,
    )
    assert_error(response, 404, "NOT_FOUND")


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.integration)
def test_refused_credentials_flag_the_account(
    client: TestClient, auth_headers: dict[str, str], upstream_for, provider
) -> None:
    wrong = {key: f"{value}-revoked" for key, value in provider.credentials.items()}
    if provider.integration == "shopify":
        wrong["shop"] = "acme"
    upstream = upstream_for(provider)
    account_id = make_account(provider.integration, wrong, base_url=upstream.url, tenant_id="t2")
    response = client.get(
        f"/v1/unified/{provider.category}/{provider.resources[0]}",
        params={"integrated_account_id": account_id},
        headers=auth_headers,
    )
    assert_error(response, 401, "INTEGRATION_UNAUTHORIZED")
    with session_scope(get_settings()) as session:
        stored = session.get(IntegratedAccount, account_id)
        assert stored is not None
        assert stored.status == "needs_reauth"
        events = session.exec(
            select(OutboxEvent).where(
                OutboxEvent.event_type == "integrated_account:authentication_error"
            )
        ).all()
    assert [e.payload["id"] for e in events] == [account_id]
    account = client.get(f"/v1/integrated-account/{account_id}", headers=auth_headers).json()
    assert account["status"] == "needs_reauth"


def test_forbidden_scope_is_integration_unauthorized(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    # ShipBob answers 403 when the token lacks a scope: the account must be reconnected.
    upstream = upstream_for(SHIPBOB)
    upstream.state.fail_next.append(Scripted(403, None))
    assert_error(_get(client, auth_headers, upstream, "returns"), 401, "INTEGRATION_UNAUTHORIZED")
    with session_scope(get_settings()) as session:
        stored = session.get(IntegratedAccount, upstream.account_id)
        assert stored is not None
        assert stored.status == "needs_reauth"


@pytest.fixture
def quick(settings: Settings) -> Iterator[Settings]:
    saved = settings.model_dump()
    settings.upstream_retry_max_sleep_s = 0.5
    settings.upstream_retry_default_s = 0.01
    settings.upstream_max_retries = 2
    settings.upstream_timeout_s = 0.5
    yield settings
    for key in (
        "upstream_retry_max_sleep_s",
        "upstream_retry_default_s",
        "upstream_max_retries",
        "upstream_timeout_s",
    ):
        setattr(settings, key, saved[key])


@pytest.mark.parametrize(
    ("provider", "throttled"),
    [
        (SHOPIFY, Scripted(429, {"errors": "Exceeded 2 calls per second for api client."},
                           {"Retry-After": "0.05"})),
        (SHIPBOB, Scripted(429, {"statusCode": 429, "message": "Rate limit is exceeded."},
                           {"x-retry-after": "0", "x-remaining-calls": "0"})),
        # HubSpot does not promise Retry-After: the engine waits its default.
        (HUBSPOT, Scripted(429, {"status": "error", "message": "You have reached your "
                                 "ten_secondly_rolling limit.", "errorType": "RATE_LIMIT",
                                 "policyName": "TEN_SECONDLY_ROLLING"})),
        (PIPEDRIVE, Scripted(429, {"success": False, "error": "Request over limit"},
                             {"Retry-After": "0", "x-ratelimit-remaining": "0"})),
    ],
    ids=lambda v: getattr(v, "integration", ""),
)  # fmt: skip
def test_rate_limit_is_retried_then_answered(
    client: TestClient, auth_headers: dict[str, str], upstream_for, quick, provider, throttled
) -> None:
    upstream = upstream_for(provider)
    upstream.state.fail_next.extend([throttled, throttled])
    response = _get(client, auth_headers, upstream, provider.resources[0], limit=5)
    assert response.status_code == 200, response.text
    assert len(response.json()["result"]) == 5
    assert len(upstream.state.requests) == 3

    upstream.state.requests.clear()
    upstream.state.fail_next.extend([throttled] * 3)
    response = _get(client, auth_headers, upstream, provider.resources[0], limit=5)
    assert_error(response, 429, "RATE_LIMITED")
    assert int(response.headers["retry-after"]) >= 1
    assert len(upstream.state.requests) == 3  # the first call and two retries, no more


def test_retry_after_beyond_the_bound_is_not_waited_out(
    client: TestClient, auth_headers: dict[str, str], upstream_for, quick
) -> None:
    upstream = upstream_for(SHIPBOB)
    upstream.state.fail_next.append(
        Scripted(429, {"statusCode": 429, "message": "Try again in 25 seconds."},
                 {"x-retry-after": "25"})
    )  # fmt: skip
    response = _get(client, auth_headers, upstream, "orders")
    assert_error(response, 429, "RATE_LIMITED")
    assert response.headers["retry-after"] == "25"
    assert len(upstream.state.requests) == 1


@pytest.mark.parametrize("asked", ["99999999999", "1e300"])
def test_a_huge_retry_after_is_passed_on_as_a_day_at_most(
    client: TestClient, auth_headers: dict[str, str], upstream_for, quick, asked: str
) -> None:
    upstream = upstream_for(SHIPBOB)
    upstream.state.fail_next.append(
        Scripted(429, {"statusCode": 429, "message": "Rate limit is exceeded."},
                 {"x-retry-after": asked})
    )  # fmt: skip
    response = _get(client, auth_headers, upstream, "orders")
    assert_error(response, 429, "RATE_LIMITED")
    assert response.headers["retry-after"] == "86400"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_provider_server_error_is_upstream_error(
    client: TestClient, auth_headers: dict[str, str], upstream_for, status: int
) -> None:
    upstream = upstream_for(HUBSPOT)
    upstream.state.fail_next.append(
        Scripted(status, {"status": "error", "message": "internal error", "category": "ERROR"})
    )
    body = assert_error(_get(client, auth_headers, upstream, "contacts"), 502, "UPSTREAM_ERROR")
    assert f"HTTP {status}" in body["message"]


def test_slow_provider_is_upstream_timeout(
    client: TestClient, auth_headers: dict[str, str], upstream_for, quick
) -> None:
    upstream = upstream_for(PIPEDRIVE)
    upstream.state.fail_next.append(Scripted(200, {"success": True, "data": []}, delay_s=2))
    assert_error(_get(client, auth_headers, upstream, "contacts"), 504, "UPSTREAM_TIMEOUT")


def test_unreachable_provider_is_upstream_error(
    client: TestClient, auth_headers: dict[str, str], db: None
) -> None:
    account_id = make_account(
        "hubspot", HUBSPOT.credentials, base_url=f"http://127.0.0.1:{free_port()}"
    )
    response = client.get(
        "/v1/unified/crm/contacts", params={"integrated_account_id": account_id},
        headers=auth_headers,
    )  # fmt: skip
    assert_error(response, 502, "UPSTREAM_ERROR")


def test_graphql_errors_in_a_200_are_failures(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SHOPIFY)
    upstream.state.fail_next.append(
        Scripted(200, {"data": None, "errors": [{"message": "Throttled"}]})
    )
    body = assert_error(_get(client, auth_headers, upstream, "returns"), 400, "INVALID_REQUEST")
    assert body["message"] == "Throttled"


def test_unknown_filter_and_wrong_category_are_refused(
    client: TestClient, auth_headers: dict[str, str], upstream_for
) -> None:
    upstream = upstream_for(SHIPBOB)
    body = assert_error(
        _get(client, auth_headers, upstream, "orders", colour="red"), 400, "INVALID_REQUEST"
    )
    assert "colour" in body["message"]
    response = client.get(
        "/v1/unified/crm/contacts",
        params={"integrated_account_id": upstream.account_id},
        headers=auth_headers,
    )
    assert_error(response, 404, "NOT_FOUND")
    assert upstream.state.requests == []


def test_unknown_account_is_not_found(client: TestClient, auth_headers: dict[str, str]) -> None:
    response = client.get(
        "/v1/unified/wms/orders", params={"integrated_account_id": "acct_nope"},
        headers=auth_headers,
    )  # fmt: skip
    assert_error(response, 404, "NOT_FOUND")


def test_missing_account_id_is_invalid_request(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    body = assert_error(
        client.get("/v1/unified/wms/orders", headers=auth_headers), 400, "INVALID_REQUEST"
    )
    assert "integrated_account_id" in body["message"]
