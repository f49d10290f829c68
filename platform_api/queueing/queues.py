"""Every RQ queue is built here, with the connection passed in, and the Redis client they use.

Queues are grouped in classes, the unit a pool of workers serves: a sync run can hold a
worker for hours, so webhook delivery and housekeeping (the reaper, retention, cron ticks)
get workers of their own instead of waiting behind it.
"""

from __future__ import annotations

from collections.abc import Iterable

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

# Queue classes and their queues. rq-scheduler's recurring jobs and the sync cron ticks go to
# DEFAULT, so the housekeeping class serves them.
QUEUE_CLASSES: dict[str, tuple[str, ...]] = {
    "webhooks": (WEBHOOKS,),
    "sync": (SYNC,),
    "housekeeping": (DEFAULT,),
}


class UnknownQueue(ValueError):
    """A name that is neither a queue class nor a queue."""


def resolve_queues(names: Iterable[str]) -> tuple[str, ...]:
    """The queues a worker asked for ``names`` serves, in priority order.

    Each name may be a class (``housekeeping``) or a queue (``default``), and may list several
    separated by commas; none at all means every queue."""
    wanted: set[str] = set()
    for name in (part.strip() for item in names for part in item.split(",")):
        if not name:
            continue
        if name in QUEUE_CLASSES:
            wanted.update(QUEUE_CLASSES[name])
        elif name in ALL_QUEUES:
            wanted.add(name)
        else:
            raise UnknownQueue(
                f"unknown queue or queue class {name!r}; known classes: "
                f"{', '.join(QUEUE_CLASSES)}; known queues: {', '.join(ALL_QUEUES)}"
            )
    # Priority order whatever order they were named in: a worker serving several queues takes
    # the most urgent job first.
    return tuple(q for q in ALL_QUEUES if q in wanted) if wanted else ALL_QUEUES


def get_redis(settings: Settings) -> redis.Redis:
    """A synchronous client (RQ needs bytes responses, so no decode_responses)."""
    return redis.Redis.from_url(get_redis_url(settings))


def get_queue(name: str, connection: redis.Redis) -> Queue:
    """A queue whose jobs carry JSON arguments (ids, not ORM objects)."""
    if name not in ALL_QUEUES:
        raise ValueError(f"unknown queue {name!r}; known: {', '.join(ALL_QUEUES)}")
    return Queue(name, connection=connection, serializer=JSONSerializer)
