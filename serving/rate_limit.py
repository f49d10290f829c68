"""Per-token request limit, counted in Redis so every front process shares one count.

Counting costs one Redis round trip per group of concurrent requests, not per request: while
one count of a token is on its way to Redis, the requests arriving meanwhile wait for the next
one, which adds them all with a single ``INCRBY``. Each request still learns its exact place
in the window (the total after the ``INCRBY`` minus the requests counted after it), so the
limit holds to the request across any number of fronts.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import redis
import redis.asyncio as aioredis

from core.errors import ApiError

log = logging.getLogger(__name__)

WINDOW_SECONDS = 60

# INCRBY, and an expiry for a key this call created: one command, so a window's key can never
# be left without its expiry.
_COUNT_SCRIPT = """
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if total == tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return total
"""


class Breaker(Protocol):
    """What the limiter needs of the app's Redis circuit breaker."""

    def allow(self) -> bool: ...
    def record_success(self) -> None: ...
    def record_failure(self) -> None: ...


@dataclass
class _Group:
    """Requests of one token and window counted together by one ``INCRBY``."""

    size: int = 0
    total: asyncio.Future[int | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass
class _KeyState:
    counting: bool = False  # an INCRBY for this key is on its way
    waiting: _Group | None = None  # requests that arrived meanwhile


class RateLimiter:
    """Fixed one-minute windows: the n-th request of a token in a window beyond the limit is 429.

    The limit is the token's environment's entry in ``by_environment`` when it has one, else
    ``limit_per_minute``; 0 means no limit. Redis being unreachable lets requests through
    (limiting protects the service; it is not the product) and is logged.

    ``clock`` is the wall clock the windows are cut from (``time.time``): wall-clock minutes,
    so every front names a window alike. Tests pin it, so a window cannot end between two of
    their requests.
    """

    def __init__(
        self,
        *,
        limit_per_minute: int,
        by_environment: Mapping[str, int] | None = None,
        prefix: str = "switchyard:ratelimit:inference",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._default = limit_per_minute
        self._by_environment = dict(by_environment or {})
        self._prefix = prefix
        self._clock = clock
        # One table per event loop (futures belong to the loop that made them), gone with it.
        self._keys: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _KeyState]] = (
            weakref.WeakKeyDictionary()
        )

    def limit_for(self, environment_id: str) -> int:
        """Requests per minute a token of this environment may make; 0: no limit."""
        return self._by_environment.get(environment_id, self._default)

    async def admit(
        self,
        token_id: str,
        environment_id: str,
        *,
        cache: aioredis.Redis | None,
        breaker: Breaker | None = None,
    ) -> None:
        """Count one request of the token; raise 429 ``RATE_LIMITED`` past its limit."""
        limit = self.limit_for(environment_id)
        if limit <= 0:
            return
        if cache is None or (breaker is not None and not breaker.allow()):
            log.warning("rate limit not checked: Redis unavailable")
            return
        now = self._clock()
        key = f"{self._prefix}:{token_id}:{self._window(now)}"
        keys = self._keys.setdefault(asyncio.get_running_loop(), {})
        state = keys.setdefault(key, _KeyState())
        group = state.waiting
        if group is None:
            group = state.waiting = _Group()
        group.size += 1
        place = group.size  # this request's place among the group's
        if not state.counting:
            state.counting = True
            asyncio.get_running_loop().create_task(self._count(cache, breaker, key, keys))
        total = await asyncio.shield(group.total)
        if total is None:
            return  # logged once per group by _count
        if total - group.size + place > limit:
            retry_after = max(1, math.ceil((self._window(now) + 1) * WINDOW_SECONDS - now))
            raise ApiError(
                429,
                "RATE_LIMITED",
                f"rate limit of {limit} inference requests per minute reached; "
                f"retry in {retry_after}s",
                headers={"Retry-After": str(retry_after)},
            )

    async def _count(
        self,
        cache: aioredis.Redis,
        breaker: Breaker | None,
        key: str,
        keys: dict[str, _KeyState],
    ) -> None:
        """Send the waiting group's count; repeat while more requests arrived meanwhile."""
        state = keys[key]
        group: _Group | None = None
        try:
            while state.waiting is not None:
                group, state.waiting = state.waiting, None
                total: int | None
                try:
                    total = int(
                        await cache.eval(_COUNT_SCRIPT, 1, key, group.size, WINDOW_SECONDS + 5)
                    )
                    if breaker is not None:
                        breaker.record_success()
                except (redis.RedisError, OSError) as exc:
                    log.warning("rate limit not checked: Redis unavailable (%s)", exc)
                    if breaker is not None:
                        breaker.record_failure()
                    total = None
                group.total.set_result(total)
        finally:
            # Cancelled mid-count (shutdown): nobody may wait for ever on a count never sent.
            for pending in (group, state.waiting):
                if pending is not None and not pending.total.done():
                    pending.total.set_result(None)
            state.waiting = None
            state.counting = False
            keys.pop(key, None)

    @staticmethod
    def _window(now: float) -> int:
        return int(now // WINDOW_SECONDS)
