"""The per-token limit counts concurrent requests together, exactly, in the shared Redis."""

from __future__ import annotations

import asyncio

import redis
import redis.asyncio as aioredis

from core.errors import ApiError
from core.settings import Settings
from serving.rate_limit import RateLimiter


async def _admit_all(limiter: RateLimiter, client: aioredis.Redis, n: int) -> list[int]:
    async def one() -> int:
        try:
            await limiter.admit("tok_1", "development", cache=client)
        except ApiError as exc:
            return exc.status_code
        return 200

    return list(await asyncio.gather(*(one() for _ in range(n))))


def _count_commands(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_eval", {}).get("calls", 0))


def test_concurrent_requests_share_round_trips_and_the_limit_holds_exactly(
    settings: Settings, redis_client: redis.Redis
) -> None:
    limiter = RateLimiter(limit_per_minute=25)
    redis_client.config_resetstat()

    async def scenario() -> tuple[list[int], list[int]]:
        client = aioredis.Redis.from_url(settings.redis_url)
        try:
            # Two fronts (two limiters) counting the same token.
            first = await _admit_all(limiter, client, 40)
            second = await _admit_all(RateLimiter(limit_per_minute=25), client, 5)
            return first, second
        finally:
            await client.aclose()

    first, second = asyncio.run(scenario())
    assert first.count(200) == 25 and first.count(429) == 15
    assert second == [429] * 5  # the other front sees the shared count
    # 45 requests, counted in a handful of groups rather than one command each.
    assert _count_commands(redis_client) <= 10
    keys = redis_client.keys("switchyard:ratelimit:inference:tok_1:*")
    assert len(keys) == 1 and int(redis_client.get(keys[0])) == 45
    assert 0 < redis_client.ttl(keys[0]) <= 65  # a window's key never outlives it


def test_redis_down_lets_requests_through() -> None:
    limiter = RateLimiter(limit_per_minute=1)

    async def scenario() -> list[int]:
        client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
        try:
            return await _admit_all(limiter, client, 3)
        finally:
            await client.aclose()

    assert asyncio.run(scenario()) == [200, 200, 200]


def test_no_limit_never_asks_redis(settings: Settings, redis_client: redis.Redis) -> None:
    limiter = RateLimiter(limit_per_minute=0, by_environment={"production": 5})
    redis_client.config_resetstat()

    async def scenario() -> list[int]:
        client = aioredis.Redis.from_url(settings.redis_url)
        try:
            return await _admit_all(limiter, client, 3)
        finally:
            await client.aclose()

    assert asyncio.run(scenario()) == [200, 200, 200]
    assert _count_commands(redis_client) == 0
