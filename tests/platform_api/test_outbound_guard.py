"""The outbound guard: provider calls and webhooks cannot be aimed at internal hosts.

Every bypass form is refused at write time (400) or at call time (502 ``UPSTREAM_BLOCKED``),
and a loopback listener the test runs ("the canary") never sees a request. Call-time cases
only ever aim at loopback, so a broken guard could not send traffic anywhere else.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.requests import Request
from starlette.responses import JSONResponse

from core.errors import ApiError
from core.settings import Settings, get_settings
from platform_api.crypto import encrypt_json
from platform_api.db import session_scope
from platform_api.egress import (
    BlockedAddressError,
    GuardedResolver,
    host_allowed,
    is_blocked_address,
    parse_address,
)
from platform_api.integrations.catalog import get_catalog
from platform_api.integrations.provider_access import resolve_base_url
from platform_api.services.connect_flow import check_credentials
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.unified import upstream
from tests.assertions import assert_error
from tests.conftest import ServerThread
from tests.platform_api.unified.helpers import make_account

pytestmark = pytest.mark.db

SHOPIFY_CREDENTIALS = {"shop": "acme", "access_token": "shpat_guard_test"}

# Host spellings that all mean this machine (or IPv4 inside IPv6): what an attacker writes.
LOOPBACK_FORMS = [
    "127.0.0.1",
    "localhost",
    "127.1",
    "2130706433",
    "0x7f.1",
    "0x7f000001",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
]
# Refused at write time only (never connected to by any test).
OTHER_INTERNAL_FORMS = [
    "169.254.169.254",
    "[fd00:ec2::254]",
    "10.0.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "0.0.0.0",
    "[::127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:7f00:1::]",
    "[fe80::1]",
    "0177.0.0.1",
    "[ff02::1]",
]


class Canary:
    """A loopback HTTP listener that counts every request it receives."""

    def __init__(self) -> None:
        self.hits = 0
        app = FastAPI()

        @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
        async def anything(request: Request) -> JSONResponse:
            self.hits += 1
            return JSONResponse({"orders": [], "leaked": dict(request.headers)})

        self.server = ServerThread(app)

    @property
    def port(self) -> int:
        return self.server.port


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    with listener.server:
        yield listener


@pytest.fixture
def settings(
    _test_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """Production mode: no host is exempt from the guard."""
    monkeypatch.setenv("SWITCHYARD_MODE", "production")
    monkeypatch.delenv("SWITCHYARD_OUTBOUND_ALLOWED_HOSTS", raising=False)
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


def _url(host: str, port: int, path: str = "/") -> str:
    return f"http://{host}:{port}{path}"


def _account_with_raw_override(
    integration: str, credentials: dict[str, str], base_url: str | None, **context: Any
) -> str:
    """An account whose stored override skips the write-time check (a row written before
    the fix, or by hand): the call-time guard must still hold."""
    account_id = make_account(integration, credentials, base_url=None)
    with session_scope(get_settings()) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        account.override = {"base_url": base_url} if base_url else {}
        account.context = dict(context)
        session.add(account)
    return account_id


# --- the address rules (no network) ---------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "192.168.0.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1",
        "fd00::1", "ff02::1", "ff0e::1", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1",
        "64:ff9b::7f00:1", "64:ff9b::808:808", "64:ff9b:1::1", "2002:7f00:1::", "2002:808:808::",
        "2001:0:4136:e378::1", "2130706433", "0x7f.1", "127.1", "0177.0.0.1", "fec0::1",
        "feff:ffff::1",
    ],
)  # fmt: skip
def test_internal_and_ipv4_carrying_addresses_are_blocked(address: str) -> None:
    assert is_blocked_address(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert not is_blocked_address(address)


def test_numeric_ipv4_spellings_parse_to_the_address_they_mean() -> None:
    for spelling in ("2130706433", "0x7f.1", "127.1", "0177.0.0.1", "0x7f000001"):
        assert str(parse_address(spelling)) == "127.0.0.1", spelling
    assert parse_address("api.hubapi.com") is None


def test_allow_list_matches_the_written_host_and_port_only() -> None:
    assert host_allowed("127.0.0.1", 8010, ["127.0.0.1:8010"])
    assert not host_allowed("127.0.0.1", 8011, ["127.0.0.1:8010"])
    assert not host_allowed("127.1", 8010, ["127.0.0.1:8010"])
    assert host_allowed("::1", 9, ["[::1]"])


def test_production_mode_allows_no_host_and_development_only_the_sandbox() -> None:
    production = Settings(mode="production", outbound_allowed_hosts=None)
    assert production.resolved_outbound_allowed_hosts == []
    dev = Settings(mode="development", outbound_allowed_hosts=None, sandbox_url=None)
    assert dev.resolved_outbound_allowed_hosts == [f"{dev.sandbox_host}:{dev.sandbox_port}"]


# --- the provider client's transport (connect time) -----------------------------------------


async def _send(settings: Settings, **kwargs: Any) -> upstream.UpstreamResponse:
    try:
        return await upstream.send(settings, **kwargs)
    finally:
        await upstream.close_sessions()


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_provider_client_refuses_every_loopback_form(
    settings: Settings, canary: Canary, host: str
) -> None:
    with pytest.raises(ApiError) as excinfo:
        asyncio.run(_send(settings, method="GET", url=_url(host, canary.port)))
    assert (excinfo.value.status_code, excinfo.value.code) == (502, "UPSTREAM_BLOCKED")
    assert canary.hits == 0


def test_an_allow_listed_host_and_port_is_reached(settings: Settings, canary: Canary) -> None:
    allowed = settings.model_copy(update={"outbound_allowed_hosts": [f"127.0.0.1:{canary.port}"]})
    response = asyncio.run(_send(allowed, method="GET", url=_url("127.0.0.1", canary.port)))
    assert response.status == 200 and canary.hits == 1
    # The same listener under another spelling is not on the list.
    with pytest.raises(ApiError, match="not allowed"):
        asyncio.run(_send(allowed, method="GET", url=_url("127.1", canary.port)))
    assert canary.hits == 1


def test_dns_answers_are_checked_at_connect_time(
    settings: Settings, canary: Canary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public name whose DNS answer is (or becomes) loopback: the check sees the answer the
    connection would use."""
    asked: list[str] = []
    real = asyncio.BaseEventLoop.getaddrinfo

    async def rebinding(
        self: asyncio.BaseEventLoop, host: str, port: int, *args: Any, **kwargs: Any
    ) -> list[Any]:
        asked.append(host)
        if host == "api.hubapi.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return await real(self, host, port, *args, **kwargs)

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", rebinding)
    with pytest.raises(ApiError) as excinfo:
        asyncio.run(_send(settings, method="GET", url=_url("api.hubapi.com", canary.port)))
    assert excinfo.value.code == "UPSTREAM_BLOCKED"
    assert asked == ["api.hubapi.com"] and canary.hits == 0


# --- PATCH /v1/integrated-account (write time) ----------------------------------------------


@pytest.mark.parametrize(
    "base_url",
    [_url(h, 8080) for h in LOOPBACK_FORMS + OTHER_INTERNAL_FORMS]
    + [
        "https://evil.example.com/admin",
        "http://acme.myshopify.com/admin",  # the integration's host, but not over https
        "https://acme.myshopify.com@127.0.0.1/",
        "https://user:pw@acme.myshopify.com/",
        "https://127.0.0.1/#.myshopify.com",
        "https://myshopify.com.evil.example/",
        "https://acme.myshopify.com/admin?x=1",
    ],
)
def test_patch_refuses_an_override_outside_the_integration_hosts(
    client: TestClient, auth_headers: dict[str, str], base_url: str
) -> None:
    account_id = make_account("shopify", SHOPIFY_CREDENTIALS, base_url=None)
    response = client.patch(
        f"/v1/integrated-account/{account_id}",
        json={"override": {"base_url": base_url}},
        headers=auth_headers,
    )
    assert_error(response, 400, "INVALID_REQUEST")


def test_patch_accepts_an_override_on_the_integration_hosts(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    account_id = make_account("shopify", SHOPIFY_CREDENTIALS, base_url=None)
    base_url = "https://acme-staging.myshopify.com/admin/api/2025-01"
    response = client.patch(
        f"/v1/integrated-account/{account_id}",
        json={"override": {"base_url": base_url}},
        headers=auth_headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["override"] == {"base_url": base_url}


@pytest.mark.parametrize("shop", ["evil.example/x?", "evil.example#", "127.0.0.1:8080/", "a@b", ""])
def test_template_values_must_match_the_declared_pattern(
    client: TestClient, auth_headers: dict[str, str], shop: str
) -> None:
    account_id = make_account("shopify", SHOPIFY_CREDENTIALS, base_url=None)
    response = client.patch(
        f"/v1/integrated-account/{account_id}",
        json={"context": {"shop": shop}},
        headers=auth_headers,
    )
    assert_error(response, 400, "INVALID_REQUEST")
    with pytest.raises(ApiError) as excinfo:
        check_credentials(get_catalog()["shopify"], {"shop": shop, "access_token": "t"})
    assert excinfo.value.status_code == 400


def test_context_never_overrides_a_credential() -> None:
    url = resolve_base_url(
        get_catalog()["shopify"],
        credentials={"shop": "acme", "access_token": "t"},
        context={"shop": "other"},
        settings=Settings(),
    )
    assert url == "https://acme.myshopify.com/admin/api/2025-01"


# --- unified and proxy calls (call time) ----------------------------------------------------


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_unified_and_proxy_refuse_a_stored_loopback_override(
    client: TestClient, auth_headers: dict[str, str], canary: Canary, host: str
) -> None:
    account_id = _account_with_raw_override(
        "shopify", SHOPIFY_CREDENTIALS, _url(host, canary.port, "/admin")
    )
    params = {"integrated_account_id": account_id}
    unified = client.get("/v1/unified/wms/orders", params=params, headers=auth_headers)
    assert_error(unified, 502, "UPSTREAM_BLOCKED")
    proxied = client.get("/v1/proxy/orders.json", params=params, headers=auth_headers)
    assert_error(proxied, 502, "UPSTREAM_BLOCKED")
    assert canary.hits == 0


def test_a_stored_hostile_template_value_is_refused_at_call_time(
    client: TestClient, auth_headers: dict[str, str], canary: Canary
) -> None:
    with session_scope(get_settings()) as session:
        account_id = make_account("shopify", SHOPIFY_CREDENTIALS, base_url=None)
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        hostile = {"shop": f"127.0.0.1:{canary.port}/x?", "access_token": "t"}
        account.credentials_encrypted = encrypt_json(hostile, get_settings())
        session.add(account)
    params = {"integrated_account_id": account_id}
    for path in ("/v1/unified/wms/orders", "/v1/proxy/orders.json"):
        assert_error(client.get(path, params=params, headers=auth_headers), 502, "UPSTREAM_BLOCKED")
    assert canary.hits == 0


# --- webhooks share the guard ---------------------------------------------------------------


@pytest.mark.parametrize("host", [h for h in LOOPBACK_FORMS + OTHER_INTERNAL_FORMS])
def test_webhook_targets_refuse_internal_hosts(
    client: TestClient, auth_headers: dict[str, str], host: str
) -> None:
    response = client.post(
        "/v1/webhook", json={"target_url": f"https://{host}/hook"}, headers=auth_headers
    )
    assert_error(response, 400, "INVALID_REQUEST")


def test_webhook_resolver_checks_the_answer_it_hands_to_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Webhooks resolve through the same guard: a name answering loopback is refused."""

    async def loopback(
        self: asyncio.BaseEventLoop, host: str, port: int, *args: Any, **kwargs: Any
    ) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", loopback)

    async def resolve(allowed: list[str]) -> list[str]:
        resolver = GuardedResolver(allowed)
        try:
            return [r["host"] for r in await resolver.resolve("hooks.example.com", 443)]
        finally:
            await resolver.close()

    with pytest.raises(BlockedAddressError, match="non-public"):
        asyncio.run(resolve([]))
    assert asyncio.run(resolve(["hooks.example.com"])) == ["127.0.0.1"]


# --- what a refusal tells the caller --------------------------------------------------------


def _answering(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    """Every name resolves to ``address`` (what an internal DNS answer looks like)."""

    async def internal(
        self: asyncio.BaseEventLoop, host: str, port: int, *args: Any, **kwargs: Any
    ) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", internal)


def test_a_refusal_names_the_host_and_keeps_the_address_out_of_its_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _answering(monkeypatch, "10.0.0.5")

    async def resolve() -> None:
        resolver = GuardedResolver([])
        try:
            await resolver.resolve("hooks.example.com", 443)
        finally:
            await resolver.close()

    with pytest.raises(BlockedAddressError) as excinfo:
        asyncio.run(resolve())
    assert "hooks.example.com is not allowed" in str(excinfo.value)
    assert "10.0.0.5" not in str(excinfo.value)
    assert excinfo.value.addresses == ["10.0.0.5"]  # for the log, not the caller


@pytest.mark.parametrize("path", ["/v1/proxy/orders.json", "/v1/unified/wms/orders"])
def test_a_provider_host_resolving_internally_is_refused_without_the_address(
    client: TestClient, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    account_id = make_account("shopify", SHOPIFY_CREDENTIALS, base_url=None)
    _answering(monkeypatch, "10.0.0.5")
    response = client.get(path, params={"integrated_account_id": account_id}, headers=auth_headers)
    body = assert_error(response, 502, "UPSTREAM_BLOCKED")
    assert "10.0.0.5" not in body["message"]
