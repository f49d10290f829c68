"""Per-process cache of resolved provider connections (account, installation, credentials).

A unified or proxy call needs the account, its installed integration and its decrypted
credentials: two queries and a decryption per call, which the cache saves for
``unified_connection_cache_s`` seconds. A change to an account or an installation invalidates
it when its transaction commits, in this process at once and in other processes within the
TTL. A lookup that started before an invalidation never stores its (possibly older) result:
entries carry the generation they were read under.
"""

from __future__ import annotations

import os
import threading
import time

import sqlalchemy as sa
from sqlalchemy.orm import Session

from platform_api.unified.call import ProviderConnection

MAX_ENTRIES = 10_000
_PENDING = "connection_cache_invalidations"

_lock = threading.Lock()
_entries: dict[tuple[str, str], tuple[float, tuple[int, int], ProviderConnection]] = {}
_account_generation: dict[str, int] = {}
_environment_generation: dict[str, int] = {}


def _reset_after_fork() -> None:
    # The parent may have held the lock at the fork; a child starts with an empty cache.
    global _lock
    _lock = threading.Lock()
    _entries.clear()


os.register_at_fork(after_in_child=_reset_after_fork)


def _generation(environment_id: str, integrated_account_id: str) -> tuple[int, int]:
    environment = _environment_generation.get(environment_id, 0)
    return environment, _account_generation.get(integrated_account_id, 0)


def lookup(
    environment_id: str, integrated_account_id: str
) -> tuple[ProviderConnection | None, tuple[int, int]]:
    """The cached connection (None on a miss) and the generation to ``store`` a load under."""
    with _lock:
        hit = _entries.get((environment_id, integrated_account_id))
        generation = _generation(environment_id, integrated_account_id)
        if hit is not None and hit[0] > time.monotonic() and hit[1] == generation:
            return hit[2], generation
        return None, generation


def store(
    environment_id: str,
    integrated_account_id: str,
    connection: ProviderConnection,
    *,
    generation: tuple[int, int],
    ttl_s: float,
) -> None:
    """Cache ``connection`` unless the account or environment changed since ``lookup``."""
    if ttl_s <= 0:
        return
    with _lock:
        if _generation(environment_id, integrated_account_id) != generation:
            return
        if len(_entries) >= MAX_ENTRIES:
            _entries.clear()  # bounded; a refill costs one lookup per account
        _entries[(environment_id, integrated_account_id)] = (
            time.monotonic() + ttl_s,
            generation,
            connection,
        )


def invalidate_on_commit(
    session: Session, *, integrated_account_id: str | None = None, environment_id: str | None = None
) -> None:
    """Drop the account's (or the whole environment's) cached connections when ``session``
    commits; nothing if it rolls back."""
    pending: set[tuple[str, str]] = session.info.setdefault(_PENDING, set())
    if integrated_account_id is not None:
        pending.add(("account", integrated_account_id))
    if environment_id is not None:
        pending.add(("environment", environment_id))


def invalidate(
    *, integrated_account_id: str | None = None, environment_id: str | None = None
) -> None:
    with _lock:
        if integrated_account_id is not None:
            _account_generation[integrated_account_id] = (
                _account_generation.get(integrated_account_id, 0) + 1
            )
            for key in [k for k in _entries if k[1] == integrated_account_id]:
                del _entries[key]
        if environment_id is not None:
            _environment_generation[environment_id] = (
                _environment_generation.get(environment_id, 0) + 1
            )
            for key in [k for k in _entries if k[0] == environment_id]:
                del _entries[key]


@sa.event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    for kind, value in session.info.pop(_PENDING, set()):
        if kind == "account":
            invalidate(integrated_account_id=value)
        else:
            invalidate(environment_id=value)


@sa.event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_PENDING, None)
