"""The HTTP side of a worker process: one event loop on a thread of its own and one kept-alive
session, reused by every delivery job the process runs.

A job used to build both per job (``asyncio.run`` and a fresh session): a new TCP connection to
every receiver on every job. Kept across jobs, a burst reuses its connections, and the loop
running between jobs notices a receiver closing an idle connection when it happens, instead of
the next job finding it stale. The thread does not survive a fork: a forked work horse (RQ's
forking worker) builds its own on first use.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from core.settings import Settings
from platform_api.webhooks.sender import make_session

T = TypeVar("T")


@dataclass(frozen=True)
class SessionConfig:
    """What a session is built from; settings that change it get a new session."""

    timeout: float
    max_connections: int
    allowed_hosts: tuple[str, ...]
    allow_only: tuple[str, ...] | None = None

    @classmethod
    def of(cls, settings: Settings) -> SessionConfig:
        only = settings.egress_allow_only
        return cls(
            settings.webhook_timeout_seconds,
            settings.webhook_send_concurrency,
            tuple(settings.webhook_allowed_hosts),
            None if only is None else tuple(only),
        )


class SendLoop:
    """An event loop running on a daemon thread, with the process's delivery session."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="webhook-send-loop", daemon=True
        )
        self.thread.start()
        self._session: aiohttp.ClientSession | None = None
        self._config: SessionConfig | None = None

    def usable(self) -> bool:
        """Still this process's (not inherited through a fork) and still running."""
        return self.pid == os.getpid() and self.thread.is_alive()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result.

        If the wait is cut short (RQ's job timeout raises in this thread), the coroutine is
        cancelled: nothing of an abandoned job keeps sending in the background."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        """Close the session's connections and stop the loop (at the process's exit)."""
        if not self.usable():
            return
        if self._session is not None:
            with contextlib.suppress(Exception):  # exiting anyway
                self.run(self._session.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)

    async def session(self, settings: Settings) -> aiohttp.ClientSession:
        """The session for ``settings`` (called on the loop)."""
        config = SessionConfig.of(settings)
        if self._session is None or self._session.closed or config != self._config:
            if self._session is not None:
                await self._session.close()
            self._session = make_session(
                config.timeout,
                config.max_connections,
                list(config.allowed_hosts),
                None if config.allow_only is None else list(config.allow_only),
            )
            self._config = config
        return self._session


_current: SendLoop | None = None
_lock = threading.Lock()


def send_loop() -> SendLoop:
    """This process's loop, started on first use (and again in a forked child)."""
    global _current
    with _lock:
        if _current is None or not _current.usable():
            _current = SendLoop()
            atexit.register(_current.close)
        return _current
