"""SWITCHYARD_EGRESS_ALLOW_ONLY: outbound connections reach only the listed hosts.

An unlisted host is refused before anything is resolved or dialled: a loopback listener (the
canary) never sees a request, and the DNS lookups are recorded and must be none. Listed hosts
are reached, loopback ones included. Unset, the guard is what it was.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from rq import SimpleWorker
from rq.serializers import JSONSerializer
from starlette.requests import Request
from starlette.responses import JSONResponse

from core.errors import ApiError
from core.settings import Settings, get_settings
from platform_api.egress import (
    BlockedAddressError,
    GuardedResolver,
    NotListedError,
    check_allow_only,
    check_literal,
)
from platform_api.integrations.catalog import get_catalog
from platform_api.queueing.queues import WEBHOOKS, get_queue
from platform_api.services.connect_flow import verify_credentials
from platform_api.services.oauth_client import request_tokens
from platform_api.unified import upstream
from platform_api.webhooks.dispatcher import dispatch_once
from switchyard.app import create_app
from tests.assertions import assert_error
from tests.conftest import ServerThread
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.webhooks.conftest import create_webhook, deliveries, emit, settled

SETTING = "SWITCHYARD_EGRESS_ALLOW_ONLY"
SHOPIFY_CREDENTIALS = {"shop": "acme", "access_token": "shpat_allow_only_test"}


class Canary:
    """A loopback HTTP listener that counts every request it receives."""

    def __init__(self) -> None:
        self.hits = 0
        app = FastAPI()

        @app.api_route("/{path:path}", methods=["GET", "POST"])
        async def anything(request: Request) -> JSONResponse:
            self.hits += 1
            return JSONResponse({"orders": [], "products": []})

        self.server = ServerThread(app)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    with listener.server:
        yield listener


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every DNS lookup made (each answered with loopback, so none leaves the machine)."""
    asked: list[str] = []

    async def recording(
        self: asyncio.BaseEventLoop, host: str, port: int, *args: Any, **kwargs: Any
    ) -> list[Any]:
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", recording)
    return asked


def _with(settings: Settings, allow_only: list[str] | None, **update: Any) -> Settings:
    return settings.model_copy(update={"egress_allow_only": allow_only, **update})


@contextmanager
def _client(settings: Settings, allow_only: list[str] | None) -> Iterator[TestClient]:
    """The app built with the allow-only list (and loopback webhooks allowed, as in dev)."""
    app = create_app(_with(settings, allow_only, webhook_allowed_hosts=["127.0.0.1"]))
    with TestClient(app) as client:
        yield client


def _run(coroutine: Any) -> Any:
    async def run() -> Any:
        try:
            return await coroutine
        finally:
            await upstream.close_sessions()

    return asyncio.run(run())


def _resolve(allowed: list[str], allow_only: list[str] | None, host: str, port: int) -> list[str]:
    async def run() -> list[str]:
        resolver = GuardedResolver(allowed, allow_only)  # built on the loop it resolves on
        try:
            return [r["host"] for r in await resolver.resolve(host, port)]
        finally:
            await resolver.close()

    return asyncio.run(run())


# --- the rule (no network) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "port", "entries"),
    [
        ("hooks.internal", 443, ["hooks.internal:443"]),
        ("hooks.internal", 8443, ["hooks.internal"]),
        ("HOOKS.Internal", 443, ["hooks.INTERNAL:443"]),
        ("127.0.0.1", 8010, ["127.0.0.1:8010", "hooks.internal:443"]),
        ("::1", 8010, ["[::1]:8010"]),
        ("[::1]", 8010, ["[::1]"]),
    ],
)
def test_check_allow_only_passes_a_listed_host(host: str, port: int, entries: list[str]) -> None:
    assert check_allow_only(host, port, entries) is True


@pytest.mark.parametrize(
    ("host", "port", "entries"),
    [
        ("hooks.internal", 8443, ["hooks.internal:443"]),
        ("127.0.0.1", 8011, ["127.0.0.1:8010"]),
        ("127.1", 8010, ["127.0.0.1:8010"]),  # the same address under another spelling
        ("evil.hooks.internal", 443, ["hooks.internal"]),
        ("::1", 8010, ["127.0.0.1:8010"]),
        ("[::1]", 8011, ["[::1]:8010"]),
        ("api.hubapi.com", 443, []),  # an empty list allows nothing
    ],
)
def test_check_allow_only_refuses_an_unlisted_host(
    host: str, port: int, entries: list[str]
) -> None:
    with pytest.raises(NotListedError) as excinfo:
        check_allow_only(host, port, entries)
    assert isinstance(excinfo.value, BlockedAddressError)  # every caller's refusal path
    assert SETTING in str(excinfo.value) and host in str(excinfo.value)


def test_check_allow_only_unset_changes_nothing() -> None:
    assert check_allow_only("10.0.0.1", 80, None) is False
    check_literal("api.hubapi.com", 443, [], None)
    with pytest.raises(BlockedAddressError, match="non-public") as excinfo:
        check_literal("127.0.0.1", 80, [], None)
    assert not isinstance(excinfo.value, NotListedError)


def test_check_literal_lets_listed_private_hosts_through_and_nothing_else() -> None:
    check_literal("127.0.0.1", 8010, [], ["127.0.0.1:8010"])
    check_literal("localhost", 8010, [], ["localhost"])
    # On the development allow-list, but not on the allow-only list: refused.
    with pytest.raises(NotListedError):
        check_literal("127.0.0.1", 8010, ["127.0.0.1"], ["hooks.internal"])
    with pytest.raises(NotListedError):
        check_literal("api.hubapi.com", 443, [], [])


# --- the resolver: no lookup for an unlisted host -------------------------------------------


def test_the_resolver_looks_up_no_unlisted_host(lookups: list[str]) -> None:
    only = ["hooks.internal:443"]
    with pytest.raises(NotListedError, match=SETTING):
        # On the allow-list, yet not looked up: the allow-only list decides first.
        _resolve(["hooks.example.com"], only, "hooks.example.com", 443)
    assert lookups == []
    # A listed name is looked up, and its (loopback) answer is not refused.
    assert _resolve([], only, "hooks.internal", 443) == ["127.0.0.1"]
    assert lookups == ["hooks.internal"]


def test_the_resolver_without_allow_only_is_unchanged(lookups: list[str]) -> None:
    with pytest.raises(BlockedAddressError, match="non-public") as excinfo:
        _resolve([], None, "hooks.example.com", 443)
    assert not isinstance(excinfo.value, NotListedError)
    assert lookups == ["hooks.example.com"]


# --- webhooks: refused at creation and update -----------------------------------------------


@pytest.mark.db
@pytest.mark.parametrize(
    ("allow_only", "target"),
    [
        (["hooks.internal:443"], "https://hooks.example.com/in"),
        (["hooks.internal:443"], "https://hooks.internal:8443/in"),
        # On webhook_allowed_hosts, but not on the allow-only list.
        (["hooks.internal:443"], "http://127.0.0.1:8010/in"),
        ([], "https://hooks.example.com/in"),
    ],
)
def test_webhook_create_refuses_an_unlisted_target(
    settings: Settings, auth_headers: dict[str, str], allow_only: list[str], target: str
) -> None:
    with _client(settings, allow_only) as client:
        response = client.post("/v1/webhook", json={"target_url": target}, headers=auth_headers)
        body = assert_error(response, 400, "INVALID_REQUEST")
        assert SETTING in body["message"]
        assert target.split("/")[2].split(":")[0] in body["message"]
        assert client.get("/v1/webhook", headers=auth_headers).json()["result"] == []


@pytest.mark.db
@pytest.mark.parametrize(
    "target",
    [
        "https://hooks.internal/in",  # no port: https's 443
        "https://hooks.internal:443/in",
        "https://10.0.0.5/in",  # listed: exempt from the non-public address rule
        "http://127.0.0.1:8010/in",
    ],
)
def test_webhook_create_accepts_a_listed_target(
    settings: Settings, auth_headers: dict[str, str], target: str
) -> None:
    with _client(settings, ["hooks.internal:443", "10.0.0.5", "127.0.0.1:8010"]) as client:
        hook = create_webhook(client, auth_headers, target)
    assert hook["target_url"] == target


@pytest.mark.db
def test_webhook_update_refuses_an_unlisted_target(
    settings: Settings, auth_headers: dict[str, str]
) -> None:
    with _client(settings, ["hooks.internal:443"]) as client:
        hook = create_webhook(client, auth_headers, "https://hooks.internal/in")
        response = client.patch(
            f"/v1/webhook/{hook['id']}",
            json={"target_url": "https://hooks.example.com/in"},
            headers=auth_headers,
        )
        body = assert_error(response, 400, "INVALID_REQUEST")
        assert SETTING in body["message"] and "hooks.example.com" in body["message"]
        stored = client.get(f"/v1/webhook/{hook['id']}", headers=auth_headers).json()
        assert stored["target_url"] == "https://hooks.internal/in"

        moved = client.patch(
            f"/v1/webhook/{hook['id']}",
            json={"target_url": "https://hooks.internal:443/other"},
            headers=auth_headers,
        )
        assert moved.status_code == 200, moved.text


# --- webhooks: a stored target outside the list fails its delivery --------------------------


def _pump(connection: redis.Redis, until: Callable[[], bool], timeout: float = 15.0) -> None:
    """Dispatch and run a burst worker until ``until()`` holds (a bounded wait)."""
    queue = get_queue(WEBHOOKS, connection)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dispatch_once(get_settings(), connection)
        SimpleWorker([queue], connection=connection, serializer=JSONSerializer).work(
            burst=True, logging_level="WARNING"
        )
        if until():
            return
        time.sleep(0.05)
    raise AssertionError("deliveries did not settle in time")


def _worker_env(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """What the delivery worker reads (it reads the process's settings): one attempt each."""
    values = {
        "SWITCHYARD_WEBHOOK_RETRY_SCHEDULE": "[0]",
        "SWITCHYARD_WEBHOOK_TIMEOUT_SECONDS": "2",
        **env,
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()


@pytest.mark.db
def test_a_delivery_to_a_stored_unlisted_target_fails_without_a_connection(
    settings: Settings,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    canary: Canary,
    monkeypatch: pytest.MonkeyPatch,
    lookups: list[str],
) -> None:
    with _client(settings, None) as client:
        literal = create_webhook(client, auth_headers, f"{canary.url}/in")
        named = create_webhook(client, auth_headers, "https://hooks.example.com/in")
        # Stored before the list was set (or narrowed): delivery must refuse both.
        _worker_env(
            monkeypatch,
            SWITCHYARD_WEBHOOK_ALLOWED_HOSTS='["127.0.0.1", "hooks.example.com"]',
            SWITCHYARD_EGRESS_ALLOW_ONLY='["hooks.internal:443"]',
        )
        emit()
        _pump(
            redis_client,
            lambda: all(settled(client, auth_headers, h["id"])() for h in (literal, named)),
        )

        for hook, host in ((literal, "127.0.0.1"), (named, "hooks.example.com")):
            [delivery] = deliveries(client, auth_headers, hook["id"])
            assert delivery["status"] == "failed"
            [attempt] = delivery["attempts"]
            assert attempt["status_code"] is None
            assert attempt["error"].startswith("blocked:")
            assert host in attempt["error"] and SETTING in attempt["error"]
    assert canary.hits == 0 and lookups == []


@pytest.mark.db
def test_a_delivery_to_a_listed_target_is_sent(
    settings: Settings,
    auth_headers: dict[str, str],
    redis_client: redis.Redis,
    canary: Canary,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _client(settings, None) as client:
        hook = create_webhook(client, auth_headers, f"{canary.url}/in")
        # Loopback is no longer on the webhook allow-list: being listed is what lets it through.
        _worker_env(
            monkeypatch,
            SWITCHYARD_WEBHOOK_ALLOWED_HOSTS="[]",
            SWITCHYARD_EGRESS_ALLOW_ONLY=json.dumps([f"127.0.0.1:{canary.port}"]),
        )
        emit()
        _pump(redis_client, settled(client, auth_headers, hook["id"]))
        [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "succeeded", delivery
    assert canary.hits == 1


# --- provider calls, credential checks, token requests --------------------------------------


@pytest.mark.db
def test_unified_and_proxy_calls_refuse_an_unlisted_upstream(
    settings: Settings, auth_headers: dict[str, str], canary: Canary
) -> None:
    # 127.0.0.1 is on the tests' outbound allow-list: the allow-only list still decides.
    account_id = make_account(
        "shopify", SHOPIFY_CREDENTIALS, base_url=f"http://127.0.0.1:{canary.port}/admin"
    )
    params = {"integrated_account_id": account_id}
    with _client(settings, [f"127.0.0.1:{canary.port + 1}", "hooks.internal"]) as client:
        for path in ("/v1/unified/wms/orders", "/v1/proxy/orders.json"):
            body = assert_error(
                client.get(path, params=params, headers=auth_headers), 502, "UPSTREAM_BLOCKED"
            )
            assert SETTING in body["message"] and "127.0.0.1" in body["message"]
    assert canary.hits == 0


@pytest.mark.db
def test_unified_and_proxy_calls_reach_a_listed_upstream(
    settings: Settings, auth_headers: dict[str, str], canary: Canary
) -> None:
    account_id = make_account(
        "shopify", SHOPIFY_CREDENTIALS, base_url=f"http://127.0.0.1:{canary.port}/admin"
    )
    params = {"integrated_account_id": account_id}
    with _client(settings, [f"127.0.0.1:{canary.port}"]) as client:
        for path in ("/v1/unified/wms/orders", "/v1/proxy/orders.json"):
            response = client.get(path, params=params, headers=auth_headers)
            assert response.status_code == 200, response.text
    assert canary.hits == 2


def test_a_provider_call_to_an_unlisted_name_is_not_looked_up(
    settings: Settings, lookups: list[str]
) -> None:
    call = upstream.send(_with(settings, []), method="GET", url="https://api.hubapi.com/crm/v3")
    with pytest.raises(ApiError) as excinfo:
        _run(call)
    assert (excinfo.value.status_code, excinfo.value.code) == (502, "UPSTREAM_BLOCKED")
    assert SETTING in excinfo.value.message
    assert lookups == []


def test_a_credential_check_refuses_an_unlisted_host(settings: Settings, canary: Canary) -> None:
    manifest = get_catalog()["sandbox"]

    def check(allow_only: list[str]) -> None:
        _run(
            verify_credentials(
                _with(settings, allow_only),
                manifest,
                {"api_key": "sk_test"},
                context={},
                override={"base_url": canary.url},
            )
        )

    with pytest.raises(ApiError) as excinfo:
        check(["hooks.internal"])
    # What any refused host gets from a credential check.
    assert (excinfo.value.status_code, excinfo.value.code) == (503, "PROVIDER_UNAVAILABLE")
    assert canary.hits == 0
    check([f"127.0.0.1:{canary.port}"])
    assert canary.hits == 1


def test_an_oauth_token_request_refuses_an_unlisted_host(
    settings: Settings, canary: Canary
) -> None:
    manifest = get_catalog()["sandbox_oauth"]
    form = {"grant_type": "refresh_token", "refresh_token": "rt"}

    def ask(allow_only: list[str]) -> None:
        tokens = _with(settings, allow_only)
        _run(request_tokens(tokens, manifest, f"{canary.url}/oauth/token", form))

    with pytest.raises(ApiError) as excinfo:
        ask([])
    assert (excinfo.value.status_code, excinfo.value.code) == (503, "PROVIDER_UNAVAILABLE")
    assert canary.hits == 0
    # Listed: the request is made (the canary's answer holds no token, hence the 400).
    with pytest.raises(ApiError) as excinfo:
        ask([f"127.0.0.1:{canary.port}"])
    assert excinfo.value.code == "OAUTH_EXCHANGE_FAILED"
    assert canary.hits == 1
