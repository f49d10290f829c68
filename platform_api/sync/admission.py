"""Admission: which waiting sync runs are handed to the workers, so that no environment or
account starves another.

A run is created ``queued`` and waits (``admitted_at`` unset) until its environment has fewer
than ``sync_max_runs_per_environment`` admitted runs under way; then it is admitted and its RQ
job enqueued. The ``sync`` queue therefore holds at most that many runs of one environment, so
another environment's run waits behind at most that many, not behind a whole backlog. Inside an
environment, free places go to the accounts with the fewest runs under way, oldest run first,
so one account's hundred runs take turns with another's one.

Admission runs when a run is created, when one ends (its place frees up) and on every reaper
pass (the safety net for a process that died in between).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import redis
import sqlalchemy as sa
import structlog
from sqlalchemy import event
from sqlmodel import Session, col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.queueing.queues import SYNC, get_queue
from platform_api.queueing.task_paths import EXECUTE_SYNC_RUN
from platform_api.tables.common import utcnow
from platform_api.tables.environment import Environment
from platform_api.tables.sync import ACTIVE_STATES, SyncJobRun

log = structlog.get_logger(__name__)

# Waiting runs of one environment considered per admission (oldest first).
WAITING_WINDOW = 1000


def _lock_environment(session: Session, environment_id: str) -> None:
    """Serialize admissions of one environment: a row lock on PostgreSQL, the database's
    write lock on SQLite (both held until the transaction ends)."""
    session.execute(
        sa.update(Environment)
        .where(col(Environment.id) == environment_id)
        .values(id=col(Environment.id))
        .execution_options(synchronize_session=False)
    )


def pick_fairly(waiting: list[tuple[str, str]], busy: Counter[str], places: int) -> list[str]:
    """Up to ``places`` run ids from ``waiting`` ((run id, account id), oldest first), each
    going to the account with the fewest runs under way (``busy``), oldest run on ties."""
    queues: dict[str, list[str]] = defaultdict(list)
    for run_id, account_id in waiting:
        queues[account_id].append(run_id)
    load = Counter({account: busy.get(account, 0) for account in queues})
    first_seen = {account: i for i, account in enumerate(queues)}
    picked: list[str] = []
    while len(picked) < places and queues:
        account = min(queues, key=lambda a: (load[a], first_seen[a]))
        picked.append(queues[account].pop(0))
        load[account] += 1
        if not queues[account]:
            del queues[account]
    return picked


def admit(session: Session, settings: Settings, *, environment_id: str) -> list[str]:
    """Admit as many waiting runs of the environment as it has free places; returns their ids
    (enqueue them once this transaction commits)."""
    _lock_environment(session, environment_id)
    under_way = session.exec(
        select(SyncJobRun.integrated_account_id)
        .where(col(SyncJobRun.environment_id) == environment_id)
        .where(col(SyncJobRun.status).in_(ACTIVE_STATES))
        .where(col(SyncJobRun.admitted_at).is_not(None))
    ).all()
    places = settings.sync_max_runs_per_environment - len(under_way)
    if places <= 0:
        return []
    waiting = session.exec(
        select(SyncJobRun.id, SyncJobRun.integrated_account_id)
        .where(col(SyncJobRun.environment_id) == environment_id)
        .where(col(SyncJobRun.status) == "queued")
        .where(col(SyncJobRun.admitted_at).is_(None))
        .order_by(col(SyncJobRun.created_at), col(SyncJobRun.id))
        .limit(WAITING_WINDOW)
    ).all()
    picked = pick_fairly([(r, a) for r, a in waiting], Counter(under_way), places)
    if picked:
        session.execute(
            sa.update(SyncJobRun)
            .where(col(SyncJobRun.id).in_(picked))
            .values(admitted_at=utcnow())
            .execution_options(synchronize_session=False)
        )
    return picked


def admit_after_commit(
    session: Session, connection: redis.Redis, settings: Settings, *, environment_id: str
) -> None:
    """Once ``session`` commits (a run was created or ended), admit what now fits."""

    def after_commit(_: Session) -> None:
        admit_and_enqueue(settings, connection, environment_id=environment_id)

    event.listen(session, "after_commit", after_commit, once=True)


def admit_and_enqueue(
    settings: Settings, connection: redis.Redis, *, environment_id: str
) -> list[str]:
    """Admit in a transaction of its own, then hand the admitted runs to the ``sync`` queue.
    A failure leaves them for the reaper: waiting ones are admitted on its next pass, admitted
    ones whose RQ job is missing are queued again."""
    try:
        with session_scope(settings) as session:
            admitted = admit(session, settings, environment_id=environment_id)
        for run_id in admitted:
            enqueue(connection, run_id)
    except (redis.RedisError, sa.exc.SQLAlchemyError):
        log.error("sync_runs_not_admitted", environment_id=environment_id, exc_info=True)
        return []
    return admitted


def admit_after_run(settings: Settings, connection: redis.Redis, run_id: str) -> list[str]:
    """A run has ended (or its worker let go of it): its place goes to the next waiting run."""
    with session_scope(settings) as session:
        run = session.get(SyncJobRun, run_id)
        environment_id = run.environment_id if run is not None else None
    if environment_id is None:
        return []
    return admit_and_enqueue(settings, connection, environment_id=environment_id)


def enqueue(connection: redis.Redis, run_id: str) -> None:
    """The run's RQ job on the ``sync`` queue (its id is the run's)."""
    get_queue(SYNC, connection).enqueue(
        EXECUTE_SYNC_RUN, run_id, job_id=run_id, job_timeout=6 * 3600
    )


def environments_waiting(session: Session) -> list[str]:
    """The environments with runs waiting for admission."""
    return list(
        session.exec(
            select(SyncJobRun.environment_id)
            .where(col(SyncJobRun.status) == "queued")
            .where(col(SyncJobRun.admitted_at).is_(None))
            .distinct()
        ).all()
    )
