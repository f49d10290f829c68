"""API-token lookups remembered in the process, dropped the moment any process revokes them.

The shared cache (Redis, ``tokens.authenticate``) answers a token check in one round trip;
this one answers without any, which is most of what a platform call spends on authentication
(measured: 0.3-0.65 ms of a unified call). It is safe only as long as revocations reach it:

* a revocation publishes the token's hash on ``CHANNEL`` after its commit (``forget_token``),
  and drops it at once from every local cache of the revoking process;
* each front keeps a subscription open (``listen``); entries are used only while it is,
  and all are dropped whenever it is (re)established, since messages may have been missed;
* a lookup that started before a revocation never stores its (possibly older) answer: entries
  carry the generation they were read under, and every drop starts a new one.

Entries live ``auth_local_cache_s`` seconds; requests that carry an admission check (the
inference rate limit) go to Redis anyway and do not use this cache.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from datetime import datetime

import redis
import redis.asyncio as aioredis
import structlog
from redis.asyncio.client import PubSub

log = structlog.get_logger(__name__)

CHANNEL = "switchyard:token-revoked"
MAX_ENTRIES = 10_000
_PING_S = 2.0  # a subscription silent for longer is treated as lost

# Every cache of this process, so a revocation committed here drops its token synchronously.
_CACHES: weakref.WeakSet[LocalTokenCache] = weakref.WeakSet()


class LocalTokenCache:
    """Token hash → principal (or None for an unknown secret), for ``ttl_s`` seconds."""

    def __init__(self, ttl_s: float) -> None:
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, object]] = {}
        self.generation = 0
        self.live = False  # subscribed to revocations: entries may be used
        _CACHES.add(self)

    def get(self, digest: str) -> tuple[bool, object]:
        """``(True, principal-or-None)`` on a usable hit, ``(False, None)`` otherwise."""
        if not self.live:
            return False, None
        hit = self._entries.get(digest)
        if hit is None or hit[0] < time.monotonic():
            return False, None
        return True, hit[1]

    def put(self, digest: str, principal: object, *, generation: int) -> None:
        """Remember ``principal`` unless something was dropped since ``generation`` was read."""
        if self._ttl_s <= 0 or not self.live:
            return
        with self._lock:
            if generation != self.generation:
                return
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()  # bounded; a refill costs one Redis round trip each
            self._entries[digest] = (time.monotonic() + self._ttl_s, principal)

    def drop(self, digest: str) -> None:
        with self._lock:
            self.generation += 1
            self._entries.pop(digest, None)

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()

    async def listen(self, redis_url: str) -> None:
        """Keep a subscription to revocations (until cancelled); the cache is live while it
        holds: from Redis's confirmation of the subscription, as long as each ping is
        answered within ``_PING_S`` seconds (a Redis that stops answering is a lost one)."""
        while True:
            # Its own client: a subscription waits indefinitely, which the front's short
            # socket timeouts would end.
            client = aioredis.Redis.from_url(redis_url, socket_connect_timeout=_PING_S)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    await self._follow(pubsub)
            except (redis.RedisError, OSError, TimeoutError) as exc:
                if self.live:
                    log.warning("token_revocations_unsubscribed", error=type(exc).__name__)
            finally:
                self.live = False
                self.clear()
                await client.aclose()
            await asyncio.sleep(_PING_S)

    async def _follow(self, pubsub: PubSub) -> None:
        heard = time.monotonic()
        pinged = heard
        while True:
            message = await pubsub.get_message(timeout=_PING_S / 4)
            now = time.monotonic()
            if message is not None:
                heard = now
                if message["type"] == "subscribe":
                    self.clear()  # anything revoked while not subscribed is forgotten
                    self.live = True
                elif message["type"] == "message":
                    self.drop(message["data"].decode())
            if now - heard > _PING_S:
                raise TimeoutError("Redis stopped answering the revocation subscription")
            if now - pinged > _PING_S / 2:
                await pubsub.ping()
                pinged = now


def expired(principal_expires_at: str | None, now: datetime) -> bool:
    return principal_expires_at is not None and datetime.fromisoformat(principal_expires_at) <= now


def drop_everywhere(digest: str) -> None:
    """Drop ``digest`` from every cache of this process (a revocation committed here)."""
    for cache in list(_CACHES):
        cache.drop(digest)


def publish_revocation(cache: redis.Redis, digest: str) -> None:
    """Tell every process's cache that ``digest`` is revoked."""
    drop_everywhere(digest)
    cache.publish(CHANNEL, digest)
