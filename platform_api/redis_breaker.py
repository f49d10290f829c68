"""A circuit breaker for the front's Redis calls (token cache, rate limits).

Those calls are an optimisation: the database can answer a token check without them. When
Redis fails (refused, reset, timed out), the breaker opens and requests skip Redis for
``cooldown_s``; then one request tries it again (half-open) and its outcome closes or re-opens
the breaker. An unreachable Redis therefore costs one timeout per cooldown, not one per
request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)


class CircuitBreaker:
    def __init__(self, cooldown_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.cooldown_s = cooldown_s
        self._monotonic = clock
        self._lock = threading.Lock()
        self._open_until = 0.0
        self._trial_in_flight = False
        self.opened = 0  # how many times it opened (for logs and tests)

    def allow(self) -> bool:
        """Whether this request may call Redis."""
        with self._lock:
            if self._open_until == 0.0:
                return True
            if self._monotonic() < self._open_until or self._trial_in_flight:
                return False
            self._trial_in_flight = True  # half-open: this request tries
            return True

    def record_success(self) -> None:
        with self._lock:
            if self._open_until:
                log.info("redis_breaker_closed")
            self._open_until, self._trial_in_flight = 0.0, False

    def record_failure(self) -> None:
        with self._lock:
            if not self._open_until or self._trial_in_flight:
                self.opened += 1
                log.warning("redis_breaker_open", cooldown_s=self.cooldown_s)
            self._open_until = self._monotonic() + self.cooldown_s
            self._trial_in_flight = False
