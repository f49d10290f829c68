"""Per-token request limit, counted in Redis so every front process shares one count."""

from __future__ import annotations

import logging
import math
import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from platform_api.errors import ApiError

log = logging.getLogger(__name__)

WINDOW_SECONDS = 60


class RateLimiter:
    """Fixed one-minute windows: the n-th request of a token in a window beyond the limit is 429."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        limit_per_minute: int,
        prefix: str = "switchyard:ratelimit:inference",
    ) -> None:
        self._redis = redis
        self._limit = limit_per_minute
        self._prefix = prefix

    async def hit(self, key: str) -> None:
        """Count one request for ``key``; raise 429 ``RATE_LIMITED`` when over the limit."""
        if self._limit <= 0:
            return
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        redis_key = f"{self._prefix}:{key}:{window}"
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.incr(redis_key)
                pipe.expire(redis_key, WINDOW_SECONDS + 5)
                count, _ = await pipe.execute()
        except RedisError:
            # Limiting is protection, not the product: serve rather than fail when Redis blips.
            log.warning("rate limit not checked: Redis unavailable", exc_info=True)
            return
        if count > self._limit:
            retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
            raise ApiError(
                429,
                "RATE_LIMITED",
                f"rate limit of {self._limit} inference requests per minute reached; "
                f"retry in {retry_after}s",
                headers={"Retry-After": str(retry_after)},
            )
