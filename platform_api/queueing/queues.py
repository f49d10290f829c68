"""Every RQ queue is built here, with the connection passed in, and the Redis client they use."""

from __future__ import annotations

import redis
from rq import Queue
from rq.serializers import JSONSerializer

from core.redis_url import get_redis_url
from core.settings import Settings

# Queue names, highest priority first: a worker listening on all drains them in this order.
WEBHOOKS = "webhooks"
DEFAULT = "default"
SYNC = "sync"
ALL_QUEUES = (WEBHOOKS, DEFAULT, SYNC)


def get_redis(settings: Settings) -> redis.Redis:
    """A synchronous client (RQ needs bytes responses, so no decode_responses)."""
    return redis.Redis.from_url(get_redis_url(settings))


def get_queue(name: str, connection: redis.Redis) -> Queue:
    """A queue whose jobs carry JSON arguments (ids, not ORM objects)."""
    if name not in ALL_QUEUES:
        raise ValueError(f"unknown queue {name!r}; known: {', '.join(ALL_QUEUES)}")
    return Queue(name, connection=connection, serializer=JSONSerializer)
