"""Failed token checks per client address, counted in Redis: past the limit, 429.

Guessing API tokens costs a caller ``FAILURES_PER_WINDOW`` guesses a minute per address. The
count lives in Redis (fixed wall-clock windows, as the inference rate limit cuts them in
serving/rate_limit.py), so every front shares it. A front that has seen an address over the
limit refuses that address's token checks itself until the window ends, without asking Redis:
a good guess must not get through where a bad one is refused, and clean traffic pays no
Redis call for it. Another front process learns it at that address's next failure there, so
a window allows at most the limit plus one guess per front process.

Redis being unreachable lets requests through (fail open, like the rate limit) and is logged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import redis
import structlog
from fastapi import Request

from core.errors import ApiError

log = structlog.get_logger(__name__)

FAILURES_PER_WINDOW = 20
WINDOW_SECONDS = 60
# Addresses a front remembers as over the limit; past it, those of past windows are dropped
# first, then the oldest (a wide attack costs memory, not correctness: Redis keeps counting).
MAX_BLOCKED_ADDRESSES = 10_000

# INCR, and an expiry for a key this call created: one command, so no count is left without
# its expiry.
_COUNT_SCRIPT = """
local total = redis.call('INCR', KEYS[1])
if total == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return total
"""


def client_address(request: Request) -> str:
    """The socket peer as the server reports it (uvicorn rewrites it from X-Forwarded-For
    only for the proxies ``--forwarded-allow-ips`` trusts: 127.0.0.1 by default)."""
    return request.client.host if request.client else "unknown"


class AuthFailureThrottle:
    """At most ``limit`` failed token checks per client address in a ``WINDOW_SECONDS``
    window; ``clock`` is the wall clock the windows are cut from (tests pin it)."""

    def __init__(
        self,
        *,
        limit: int = FAILURES_PER_WINDOW,
        prefix: str = "switchyard:authfail",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limit = limit
        self._prefix = prefix
        self._clock = clock
        self._blocked: dict[str, int] = {}  # address -> the window it is refused in

    def blocked(self, address: str) -> bool:
        """Whether this front already knows ``address`` to be over the limit."""
        return self._blocked.get(address) == self._window(self._clock())

    def refusal(self) -> ApiError:
        """The 429 for a blocked address, with the wait until its window ends."""
        now = self._clock()
        retry_after = max(1, math.ceil((self._window(now) + 1) * WINDOW_SECONDS - now))
        return ApiError(
            429,
            "RATE_LIMITED",
            f"too many failed token checks from this address; retry in {retry_after}s",
            headers={"Retry-After": str(retry_after)},
        )

    async def record_failure(self, address: str, *, cache: Any, breaker: Any) -> bool:
        """Count one failed check of ``address``; True once it is over the limit.

        ``cache`` is the app's async Redis client (None: none), ``breaker`` its circuit
        breaker (None: none)."""
        if cache is None or (breaker is not None and not breaker.allow()):
            log.warning("auth_failures_not_counted", reason="redis unavailable")
            return False
        window = self._window(self._clock())
        key = f"{self._prefix}:{address}:{window}"
        try:
            total = int(await cache.eval(_COUNT_SCRIPT, 1, key, WINDOW_SECONDS + 5))
        except (redis.RedisError, OSError) as exc:
            log.warning("auth_failures_not_counted", reason=repr(exc))
            if breaker is not None:
                breaker.record_failure()
            return False
        if breaker is not None:
            breaker.record_success()
        if total <= self.limit:
            return False
        self._block(address, window)
        return True

    def _block(self, address: str, window: int) -> None:
        if len(self._blocked) >= MAX_BLOCKED_ADDRESSES:
            self._blocked = {a: w for a, w in self._blocked.items() if w >= window}
            if len(self._blocked) >= MAX_BLOCKED_ADDRESSES:
                del self._blocked[next(iter(self._blocked))]
        self._blocked[address] = window

    @staticmethod
    def _window(now: float) -> int:
        return int(now // WINDOW_SECONDS)
