"""Failed token checks from one client address: past the limit in a window, 429 with
Retry-After, even for a good token; other addresses and the next window are not affected;
Redis being down lets requests through. The clock is pinned: no window ends mid-test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis
import redis.asyncio as aioredis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from core.settings import Settings
from platform_api.api.auth_throttle import WINDOW_SECONDS, AuthFailureThrottle
from tests.assertions import assert_error
from tests.conftest import free_port

LIMIT = 3
# 15 s into a window: 45 s to its end.
START = 1000 * WINDOW_SECONDS + 15.0
ROUTE = "/v1/integrated-account"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def throttled_app(app: FastAPI, clock: Clock) -> FastAPI:
    app.state.auth_throttle = AuthFailureThrottle(limit=LIMIT, clock=clock)
    return app


def _peer_from_header(app: ASGIApp) -> ASGIApp:
    """The app, seeing the socket peer a request's ``X-Test-Peer`` names: one client (one
    event loop, which the app's Redis connections belong to) speaking from two addresses."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        peer = dict(scope.get("headers", ())).get(b"x-test-peer")
        if peer is not None:
            scope = {**scope, "client": (peer.decode(), 40000)}
        await app(scope, receive, send)

    return wrapped


@pytest.fixture
def client(throttled_app: FastAPI) -> Iterator[TestClient]:
    app = _peer_from_header(throttled_app)
    with TestClient(app, client=("203.0.113.7", 40000)) as test_client:
        yield test_client


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _fail(client: TestClient, times: int) -> None:
    for n in range(times):
        assert_error(client.get(ROUTE, headers=_bearer(f"sy_guess_{n}")), 401, "UNAUTHORIZED")


def _exhaust(client: TestClient) -> None:
    """Use up the address's failures and one more (refused)."""
    _fail(client, LIMIT)
    assert_error(client.get(ROUTE, headers=_bearer("sy_one_more")), 429, "RATE_LIMITED")


def test_past_the_limit_an_address_gets_429_with_retry_after(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    _fail(client, LIMIT)
    refused = client.get(ROUTE, headers=_bearer("sy_one_more"))
    body = assert_error(refused, 429, "RATE_LIMITED")
    assert refused.headers["Retry-After"] == "45"
    assert "failed token checks" in body["message"]
    # A good token from that address is refused too: a right guess must look like a wrong one.
    good = client.get(ROUTE, headers=_bearer(make_token()))
    assert_error(good, 429, "RATE_LIMITED")


def test_the_next_window_starts_afresh(
    client: TestClient, clock: Clock, make_token: Callable[..., str]
) -> None:
    _exhaust(client)
    clock.now += 45
    assert client.get(ROUTE, headers=_bearer(make_token())).status_code == 200
    _fail(client, LIMIT)


def test_other_addresses_are_not_affected(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    _exhaust(client)
    other = {"X-Test-Peer": "198.51.100.2"}
    bad = client.get(ROUTE, headers={**other, **_bearer("sy_guess")})
    assert_error(bad, 401, "UNAUTHORIZED")
    assert client.get(ROUTE, headers={**other, **_bearer(make_token())}).status_code == 200


def test_missing_or_malformed_headers_are_not_counted(client: TestClient) -> None:
    for _ in range(LIMIT + 1):
        assert_error(client.get(ROUTE), 401, "UNAUTHORIZED")
        assert_error(client.get(ROUTE, headers={"Authorization": "Basic x"}), 401, "UNAUTHORIZED")
    _fail(client, LIMIT)


def test_readyz_token_checks_count_and_a_blocked_address_sees_no_detail(
    settings: Settings, db: None, clock: Clock, make_token: Callable[..., str]
) -> None:
    from switchyard.app import create_app

    app = create_app(settings.model_copy(update={"mode": "production"}))
    app.state.auth_throttle = AuthFailureThrottle(limit=LIMIT, clock=clock)
    with TestClient(app) as client:
        for n in range(LIMIT + 1):
            client.get("/readyz", headers=_bearer(f"sy_guess_{n}"))
        answer = client.get("/readyz", headers=_bearer(make_token()))
        assert set(answer.json()) == {"status"}  # a valid token, but not believed now
        assert_error(client.get(ROUTE, headers=_bearer(make_token())), 429, "RATE_LIMITED")


def test_wrong_metrics_tokens_count_like_wrong_api_tokens(
    settings: Settings, db: None, clock: Clock, make_token: Callable[..., str]
) -> None:
    from switchyard.app import create_app

    metrics_token = "metrics-secret"
    production = {"mode": "production", "metrics_token": metrics_token}
    app = create_app(settings.model_copy(update=production))
    app.state.auth_throttle = AuthFailureThrottle(limit=LIMIT, clock=clock)
    with TestClient(app) as client:
        assert client.get("/metrics", headers=_bearer(metrics_token)).status_code == 200
        assert_error(client.get("/metrics"), 401, "UNAUTHORIZED")  # no token: not counted
        for n in range(LIMIT):
            assert_error(client.get("/metrics", headers=_bearer(f"m{n}")), 401, "UNAUTHORIZED")
        refused = client.get("/metrics", headers=_bearer("m-one-more"))
        assert_error(refused, 429, "RATE_LIMITED")
        assert int(refused.headers["Retry-After"]) > 0
        # The right metrics token, and a good API token, are refused from there too.
        assert_error(client.get("/metrics", headers=_bearer(metrics_token)), 429, "RATE_LIMITED")
        assert_error(client.get(ROUTE, headers=_bearer(make_token())), 429, "RATE_LIMITED")
        assert set(client.get("/readyz", headers=_bearer(metrics_token)).json()) == {"status"}


class _Down:
    """An async Redis client whose every count fails."""

    async def eval(self, *args: object) -> int:
        raise redis.ConnectionError("refused")


class _Breaker:
    def __init__(self, allow: bool) -> None:
        self.allowed, self.failures = allow, 0

    def allow(self) -> bool:
        return self.allowed

    def record_failure(self) -> None:
        self.failures += 1

    def record_success(self) -> None:
        pass


async def test_redis_down_lets_requests_through(clock: Clock) -> None:
    throttle = AuthFailureThrottle(limit=0, clock=clock)
    breaker = _Breaker(allow=True)
    assert not await throttle.record_failure("203.0.113.7", cache=_Down(), breaker=breaker)
    assert breaker.failures == 1
    assert not await throttle.record_failure("203.0.113.7", cache=None, breaker=None)
    open_breaker = _Breaker(allow=False)
    assert not await throttle.record_failure("203.0.113.7", cache=_Down(), breaker=open_breaker)
    assert not throttle.blocked("203.0.113.7")


def test_an_unreachable_redis_fails_open_through_the_api(
    client: TestClient, throttled_app: FastAPI
) -> None:
    # Nothing listens there: every Redis call is refused at once.
    throttled_app.state.aredis = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0")
    throttled_app.state.redis_breaker = None
    _fail(client, LIMIT + 2)
