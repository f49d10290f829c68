"""Wake the dispatcher right after a transaction that recorded events commits.

Best effort by design: if Redis is down the kick is lost and the dispatcher's next poll
finds the events anyway, so a failed kick never fails the caller's request.
"""

from __future__ import annotations

import threading

import redis
import structlog
from sqlalchemy import event
from sqlmodel import Session

from core.redis_url import get_redis_url
from core.settings import Settings

log = structlog.get_logger(__name__)

KICK_KEY = "switchyard:webhooks:kick"
_FLAG = "webhooks_kick"
_clients: dict[str, redis.Redis] = {}
_lock = threading.Lock()


def _client(settings: Settings) -> redis.Redis:
    url = get_redis_url(settings)
    with _lock:
        client = _clients.get(url)
        if client is None:
            # Short timeouts: a hung Redis must not hold up the request that committed.
            client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
            _clients[url] = client
    return client


def kick(settings: Settings, connection: redis.Redis | None = None) -> None:
    """Ask the dispatcher for a pass now."""
    try:
        connection = connection or _client(settings)
        pipe = connection.pipeline(transaction=False)
        pipe.rpush(KICK_KEY, 1)
        pipe.expire(KICK_KEY, 60)
        pipe.execute()
    except Exception as exc:  # noqa: BLE001 - see the module docstring
        log.info("webhook_kick_skipped", error=str(exc))


def _after_commit(session: Session) -> None:
    settings: Settings | None = session.info.pop(_FLAG, None)
    if settings is not None:
        kick(settings)


def _after_rollback(session: Session, _previous: object) -> None:
    session.info.pop(_FLAG, None)


def kick_after_commit(session: Session, *, settings: Settings) -> None:
    """Kick the dispatcher (the Redis of ``settings``) once ``session`` commits; nothing
    happens on rollback. Several requests in one transaction make one kick."""
    if not event.contains(session, "after_commit", _after_commit):
        event.listen(session, "after_commit", _after_commit)
        event.listen(session, "after_soft_rollback", _after_rollback)
    # The pending kick keeps the settings it was requested with until the commit.
    session.info[_FLAG] = settings
