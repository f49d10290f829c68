"""When each API token was last used: a time per token in one Redis hash, written at most once
per ``LAST_USED_RESOLUTION_S`` per token per process, so the request path never writes to the
database and costs at most one Redis call per token per minute.

Only the time is recorded (unix seconds, whole): not the route, the address nor the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import redis
import redis.asyncio as aioredis
import structlog

from platform_api.redis_breaker import CircuitBreaker

log = structlog.get_logger(__name__)

LAST_USED_KEY = "switchyard:token_last_used"
LAST_USED_RESOLUTION_S = 60.0
MAX_TRACKED = 10_000


class UsageRecorder:
    """Decides in-process when a token's use is worth a write, and writes it to Redis.

    ``clock`` is the wall clock the recorded time comes from; ``monotonic`` the one the
    once-per-resolution decision is made by (both injected so tests pin them).
    """

    def __init__(
        self,
        *,
        resolution_s: float = LAST_USED_RESOLUTION_S,
        max_tracked: int = MAX_TRACKED,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.resolution_s = resolution_s
        self.max_tracked = max_tracked
        self._clock = clock
        self._monotonic = monotonic
        self._recorded: dict[str, float] = {}  # token id -> monotonic time of its last write

    def _due(self, token_id: str, now: float) -> bool:
        last = self._recorded.get(token_id)
        return last is None or now - last >= self.resolution_s

    def _mark(self, token_id: str, now: float) -> None:
        if token_id not in self._recorded and len(self._recorded) >= self.max_tracked:
            # Entries past the resolution decide nothing any more; if that is not enough,
            # forgetting all costs at most one extra write per token.
            horizon = now - self.resolution_s
            self._recorded = {k: v for k, v in self._recorded.items() if v > horizon}
            if len(self._recorded) >= self.max_tracked:
                self._recorded.clear()
        self._recorded[token_id] = now

    async def record_use(
        self,
        token_id: str,
        *,
        cache: aioredis.Redis | None,
        breaker: CircuitBreaker | None = None,
    ) -> bool:
        """Record that ``token_id`` was just used, when its last record here is older than the
        resolution; whether Redis was written. Never raises: usage is a convenience."""
        if cache is None:
            return False
        now = self._monotonic()
        if not self._due(token_id, now):
            return False
        if breaker is not None and not breaker.allow():
            return False  # not marked: recorded once Redis answers again
        # Marked before the write, so concurrent requests of one token write once.
        self._mark(token_id, now)
        try:
            await cache.hset(LAST_USED_KEY, token_id, str(int(self._clock())))
        except (redis.RedisError, OSError) as exc:
            if breaker is not None:
                breaker.record_failure()
            log.debug("token_last_used_not_recorded", error=type(exc).__name__)
            return False
        if breaker is not None:
            breaker.record_success()
        return True


def recorder_for(state: Any) -> UsageRecorder:
    """The app's recorder (``app.state.token_usage``), made on first use."""
    recorder: UsageRecorder | None = getattr(state, "token_usage", None)
    if recorder is None:
        recorder = state.token_usage = UsageRecorder()
    return recorder


def last_used(cache: redis.Redis, token_ids: Sequence[str]) -> dict[str, datetime]:
    """When each of ``token_ids`` was last used (UTC); tokens never seen are absent. Raises
    ``redis.RedisError`` when Redis does not answer (the caller shows "unknown")."""
    if not token_ids:
        return {}
    values = cast(list[bytes | None], cache.hmget(LAST_USED_KEY, list(token_ids)))
    found: dict[str, datetime] = {}
    for token_id, raw in zip(token_ids, values, strict=True):
        if raw is None:
            continue
        try:
            found[token_id] = datetime.fromtimestamp(int(raw), tz=UTC)
        except (ValueError, OverflowError, OSError):
            continue  # not ours: treated as never used
    return found
