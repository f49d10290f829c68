"""A token's use is recorded in Redis at most once per resolution per process, never in the
database, and never at the cost of a request when Redis is down."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.redis_breaker import CircuitBreaker
from platform_api.services.token_usage import (
    LAST_USED_KEY,
    LAST_USED_RESOLUTION_S,
    UsageRecorder,
    last_used,
)
from platform_api.services.tokens import create_token
from tests.conftest import free_port
from tests.platform_api.factories import bearer

PROBE = "/v1/integrated-account"
WALL = 1_795_770_000.0  # 2026-11-27 (pinned: no test reads the wall clock)


class Clocks:
    """The recorder's wall and monotonic clocks, moved together by the tests."""

    def __init__(self) -> None:
        self.wall = WALL
        self.mono = 1000.0

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


class CountingRedis:
    """The app's async Redis client, counting the HSETs that go through it."""

    def __init__(self, inner: aioredis.Redis) -> None:
        self.inner = inner
        self.hsets = 0

    async def hset(self, *args: Any, **kwargs: Any) -> Any:
        self.hsets += 1
        return await self.inner.hset(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


@pytest.fixture
def counting(app: FastAPI, clocks: Clocks) -> CountingRedis:
    app.state.token_usage = UsageRecorder(clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    wrapper = CountingRedis(app.state.aredis)
    app.state.aredis = wrapper
    return wrapper


@pytest.fixture
def token(db: None) -> Iterator[tuple[str, str]]:
    """A development token: (id, secret)."""
    with session_scope(get_settings()) as session:
        row, secret = create_token(session, environment="development", name="usage")
        token_id = row.id
    yield token_id, secret


def _recorded(redis_client: redis.Redis, token_id: str) -> bytes | None:
    value: bytes | None = redis_client.hget(LAST_USED_KEY, token_id)  # type: ignore[assignment]
    return value


@pytest.mark.db
def test_request_with_a_token_records_its_use(
    client: TestClient,
    counting: CountingRedis,
    token: tuple[str, str],
    redis_client: redis.Redis,
) -> None:
    token_id, secret = token
    assert _recorded(redis_client, token_id) is None
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200
    assert _recorded(redis_client, token_id) == str(int(WALL)).encode()
    assert counting.hsets == 1
    assert last_used(redis_client, [token_id, "tok_never"]) == {
        token_id: datetime.fromtimestamp(int(WALL), tz=UTC)
    }


@pytest.mark.db
def test_request_within_the_resolution_does_not_write_again_then_after_it_does(
    client: TestClient,
    counting: CountingRedis,
    clocks: Clocks,
    token: tuple[str, str],
    redis_client: redis.Redis,
) -> None:
    token_id, secret = token
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200
    clocks.advance(LAST_USED_RESOLUTION_S - 1)
    for _ in range(3):
        assert client.get(PROBE, headers=bearer(secret)).status_code == 200
    assert counting.hsets == 1
    assert _recorded(redis_client, token_id) == str(int(WALL)).encode()
    clocks.advance(1)
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200
    assert counting.hsets == 2
    expected = int(WALL + LAST_USED_RESOLUTION_S)
    assert _recorded(redis_client, token_id) == str(expected).encode()


@pytest.mark.db
def test_unauthenticated_request_records_nothing(
    client: TestClient, counting: CountingRedis, redis_client: redis.Redis
) -> None:
    assert client.get(PROBE, headers=bearer("sy_not-a-token")).status_code == 401
    assert counting.hsets == 0 and not redis_client.exists(LAST_USED_KEY)


@pytest.mark.db
def test_redis_down_the_request_still_succeeds(
    app: FastAPI, clocks: Clocks, token: tuple[str, str]
) -> None:
    # Nothing listens there: every Redis call is refused at once.
    app.state.aredis = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0")
    app.state.token_usage = UsageRecorder(clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    _, secret = token
    with TestClient(app) as client:
        for _ in range(2):
            assert client.get(PROBE, headers=bearer(secret)).status_code == 200
            clocks.advance(LAST_USED_RESOLUTION_S)
    assert app.state.redis_breaker.opened >= 1


async def test_an_open_breaker_skips_the_write_until_redis_answers(clocks: Clocks) -> None:
    class Down:
        calls = 0

        async def hset(self, *args: Any) -> None:
            self.calls += 1
            raise redis.ConnectionError("refused")

    recorder = UsageRecorder(clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    breaker = CircuitBreaker(cooldown_s=30, clock=lambda: clocks.mono)
    down = Down()
    assert not await recorder.record_use("tok_1", cache=down, breaker=breaker)  # type: ignore[arg-type]
    assert down.calls == 1 and breaker.opened == 1
    clocks.advance(LAST_USED_RESOLUTION_S)
    breaker.record_failure()  # another call failed meanwhile: open again
    assert not await recorder.record_use("tok_1", cache=down, breaker=breaker)  # type: ignore[arg-type]
    assert down.calls == 1  # the breaker said no: Redis not asked
    assert not await recorder.record_use("tok_1", cache=None, breaker=breaker)


async def test_the_recorder_forgets_tokens_past_its_bound(clocks: Clocks) -> None:
    class Up:
        def __init__(self) -> None:
            self.written: list[str] = []

        async def hset(self, key: str, token_id: str, value: str) -> None:
            self.written.append(token_id)

    recorder = UsageRecorder(
        max_tracked=2, clock=lambda: clocks.wall, monotonic=lambda: clocks.mono
    )
    up = Up()
    for token_id in ("tok_a", "tok_b", "tok_c", "tok_a"):
        await recorder.record_use(token_id, cache=up)  # type: ignore[arg-type]
    # tok_c forgot the others (none past the resolution yet): tok_a is written again.
    assert up.written == ["tok_a", "tok_b", "tok_c", "tok_a"]
    assert len(recorder._recorded) <= 2
    await recorder.record_use("tok_a", cache=up)  # type: ignore[arg-type]
    assert up.written[-1] == "tok_a" and len(up.written) == 4
