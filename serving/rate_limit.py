"""Per-token request limit, counted in Redis so every front process shares one count."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

from redis.asyncio.client import Pipeline

from core.errors import ApiError

log = logging.getLogger(__name__)

WINDOW_SECONDS = 60


class RateLimiter:
    """Fixed one-minute windows: the n-th request of a token in a window beyond the limit is 429.

    The limit is the token's environment's entry in ``by_environment`` when it has one, else
    ``limit_per_minute``; 0 means no limit.

    The count travels with the token-cache read (one Redis round trip per request): the
    authentication dependency calls ``queue`` while building its pipeline, then ``check``
    with the results once the caller is known to be authentic.
    """

    def __init__(
        self,
        *,
        limit_per_minute: int,
        by_environment: Mapping[str, int] | None = None,
        prefix: str = "switchyard:ratelimit:inference",
    ) -> None:
        self._default = limit_per_minute
        self._by_environment = dict(by_environment or {})
        self._counting = limit_per_minute > 0 or any(v > 0 for v in self._by_environment.values())
        self._prefix = prefix

    def limit_for(self, environment_id: str) -> int:
        """Requests per minute a token of this environment may make; 0: no limit."""
        return self._by_environment.get(environment_id, self._default)

    def queue(self, pipe: Pipeline, token_hash: str) -> None:
        """Count one request of the token with this hash in the current window."""
        # The environment is known only after the lookup this count travels with.
        if not self._counting:
            return
        redis_key = f"{self._prefix}:{token_hash}:{self._window(time.time())}"
        pipe.incr(redis_key)
        pipe.expire(redis_key, WINDOW_SECONDS + 5)

    def check(self, results: list[Any] | None, environment_id: str) -> None:
        """Raise 429 ``RATE_LIMITED`` when the count ``queue`` added is over the limit."""
        limit = self.limit_for(environment_id)
        if limit <= 0 or not self._counting:
            return
        if not results:
            # Limiting is protection, not the product: serve rather than fail when Redis blips.
            log.warning("rate limit not checked: Redis unavailable")
            return
        count = int(results[0])
        if count > limit:
            now = time.time()
            retry_after = max(1, math.ceil((self._window(now) + 1) * WINDOW_SECONDS - now))
            raise ApiError(
                429,
                "RATE_LIMITED",
                f"rate limit of {limit} inference requests per minute reached; "
                f"retry in {retry_after}s",
                headers={"Retry-After": str(retry_after)},
            )

    @staticmethod
    def _window(now: float) -> int:
        return int(now // WINDOW_SECONDS)
