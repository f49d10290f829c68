"""Fenced sync runs: a worker writes to its run only while it holds the run's lease, a run
waiting out a provider 429 keeps its heartbeat, and the database allows one active run per job
and account however many creates race.

Runs execute in the test's process (``execute_run``), so a test can inject how the run sleeps
and reads the clock, and act between two of its pages."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlmodel import col, select

from core.errors import ApiError
from core.settings import Settings
from platform_api.db import get_engine, session_scope
from platform_api.sync.jobs import create_run
from platform_api.sync.reaper import reap
from platform_api.sync.runner import LeaseLost, claim_run, execute_run, fence
from platform_api.tables.common import utcnow
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.sync import ACTIVE_STATES, CachedReturn, SyncJobRun, SyncJobRunCreate
from sandbox import data as sandbox_data
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, take_lease_away
from tests.platform_api.unified.fakes.common import Scripted
from tests.platform_api.unified.providers import SANDBOX

pytestmark = pytest.mark.db

# 250 returns: three pages of 100.
THREE_PAGES = replace(SANDBOX, build=lambda: sandbox_data.seed(returns=250))
SLOW_DOWN = {"error": "slow down"}


def _start(client: TestClient, headers: dict[str, str], account: str) -> str:
    job = create_job(client, headers, RETURNS_JOB)
    return start_run(client, headers, job["id"], account)


def _run(client: TestClient, headers: dict[str, str], run_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/sync-job-run/{run_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _events(settings: Settings) -> list[tuple[str, dict[str, Any]]]:
    """Every sync run event in the outbox, oldest first: (kind, payload)."""
    with session_scope(settings) as session:
        rows = session.exec(
            select(OutboxEvent)
            .where(col(OutboxEvent.event_type).startswith("sync_job_run:"))
            .order_by(col(OutboxEvent.id))
        ).all()
    return [(e.event_type.removeprefix("sync_job_run:"), e.payload) for e in rows]


def _cached_run_ids(settings: Settings) -> list[str]:
    """The run that wrote each cached return."""
    with session_scope(settings) as session:
        return list(session.exec(select(CachedReturn.run_id)).all())


def _rate_limited(settings: Settings, **changes: Any) -> Settings:
    """``settings`` where a provider 429 reaches the run at once (the engine would retry it
    first) and the run waits it out (once)."""
    waits = {"upstream_max_retries": 0, "sync_rate_limit_max_waits": 1}
    return settings.model_copy(update={**waits, **changes})


class _Clock:
    """The run's clock: real time at the start, moved on only by the run's own sleeps."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


def test_a_run_the_reaper_failed_writes_nothing_more(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
) -> None:
    upstream = upstream_for(THREE_PAGES)
    run_id = _start(client, auth_headers, upstream.account_id)

    def reap_after_the_first_page(resource: str, page: int, records: int) -> None:
        # The worker looked dead (say, a long GC pause): the reaper fails the run.
        if page == 1:
            later = utcnow() + timedelta(seconds=settings.sync_run_stale_s + 1)
            assert reap(settings, redis_client, now=later) == {
                "failed": 1,
                "requeued": 0,
                "admitted": 0,
            }

    assert asyncio.run(execute_run(settings, run_id, reap_after_the_first_page)) == "failed"

    run = _run(client, auth_headers, run_id)
    assert run["status"] == "failed" and "stopped answering" in run["error"]
    assert run["resource_stats"]["wms/returns"]["pages"] == 1
    assert any("cursor" in r["query"] for r in upstream.state.seen("/store/returns"))  # went on
    kinds = [kind for kind, _ in _events(settings)]
    assert kinds == ["started", "record", "failed"]  # one end, the reaper's
    assert _cached_run_ids(settings) == [run_id] * 100  # the first page only


def test_a_run_waiting_out_a_long_retry_after_is_not_reaped(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
) -> None:
    waiting = _rate_limited(settings, sync_run_stale_s=60.0, sync_retry_after_max_s=300.0)
    upstream = upstream_for(SANDBOX)
    upstream.state.fail_next.append(Scripted(429, SLOW_DOWN, {"Retry-After": "300"}))
    run_id = _start(client, auth_headers, upstream.account_id)
    clock = _Clock()
    slept: list[float] = []
    seen: list[tuple[str, dict[str, int]]] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += timedelta(seconds=seconds)
        # rq-scheduler's reaper passes now and then while the run waits.
        seen.append((_run(client, auth_headers, run_id)["status"],
                     reap(waiting, redis_client, now=clock.now)))  # fmt: skip

    status = asyncio.run(execute_run(waiting, run_id, sleep=sleep, clock=clock))

    assert status == "completed"
    assert sum(slept) > waiting.sync_run_stale_s  # silent this long, a worker counts as dead
    assert seen == [("rate_limited", {"failed": 0, "requeued": 0, "admitted": 0})] * len(slept)
    assert [kind for kind, _ in _events(settings)][-1] == "completed"


@pytest.mark.parametrize(
    ("retry_after", "expected_s"),
    [
        ("1000000000", "sync_retry_after_max_s"),
        ("Fri, 31 Dec 9999 23:59:59 GMT", "sync_retry_after_max_s"),
        ("when you like", "upstream_retry_default_s"),  # garbage: the engine's default
    ],
)
def test_a_retry_after_is_waited_in_heartbeat_slices_and_clamped(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
    retry_after: str,
    expected_s: str,
) -> None:
    upstream = upstream_for(SANDBOX)
    upstream.state.fail_next.append(Scripted(429, SLOW_DOWN, {"Retry-After": retry_after}))
    run_id = _start(client, auth_headers, upstream.account_id)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    limited = _rate_limited(settings)
    assert asyncio.run(execute_run(limited, run_id, sleep=sleep)) == "completed"
    assert sum(slept) == pytest.approx(getattr(limited, expected_s))
    assert max(slept) <= limited.sync_heartbeat_interval_s


def test_a_run_stopped_while_it_waits_ends_at_its_next_heartbeat(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
) -> None:
    upstream = upstream_for(SANDBOX)
    upstream.state.fail_next.append(Scripted(429, SLOW_DOWN, {"Retry-After": "300"}))
    run_id = _start(client, auth_headers, upstream.account_id)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 1:
            stopped = client.post(f"/v1/sync-job-run/{run_id}/stop", headers=auth_headers)
            assert stopped.status_code == 200, stopped.text

    limited = _rate_limited(settings, sync_retry_after_max_s=300.0, sync_heartbeat_interval_s=15.0)
    assert asyncio.run(execute_run(limited, run_id, sleep=sleep)) == "stopped"
    assert slept == [15.0]  # one slice of the 300 s it was asked to wait
    assert len(upstream.state.seen("/store/returns")) == 1  # the page it was refused, only
    assert [(kind, payload.get("error")) for kind, payload in _events(settings)] == [
        ("started", None),
        ("failed", "stopped by request"),
    ]


@pytest.mark.parametrize("taken_by", ["reaper", "stop"])
def test_a_stale_lease_token_is_refused(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
    taken_by: str,
) -> None:
    run_id = _start(client, auth_headers, upstream_for(SANDBOX).account_id)
    with session_scope(settings) as session:
        token = claim_run(session, run_id, utcnow())
    assert token is not None
    with session_scope(settings) as session:
        assert claim_run(session, run_id, utcnow()) is None  # one worker holds a run
        fence(session, run_id=run_id, token=token, heartbeat_at=utcnow())  # its lease holds

    take_lease_away(taken_by, client, auth_headers, settings, redis_client, run_id)
    ended = _run(client, auth_headers, run_id)

    with pytest.raises(LeaseLost), session_scope(settings) as session:
        fence(session, run_id=run_id, token=token, status="completed", finished_at=utcnow())
    assert _run(client, auth_headers, run_id) == ended


@contextmanager
def _run_inserts_wait_together(settings: Settings, barrier: threading.Barrier) -> Iterator[None]:
    """Every INSERT of a run waits for the others: each create has passed its check for an
    active run before any inserts (the race the unique index must settle)."""
    engine = get_engine(settings)

    def hold(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("INSERT INTO sync_job_run "):
            barrier.wait(timeout=60)  # a guard against a hang, not a timing assumption

    event.listen(engine, "before_cursor_execute", hold)
    try:
        yield
    finally:
        event.remove(engine, "before_cursor_execute", hold)


def test_concurrent_creates_make_one_active_run(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
) -> None:
    creates = 4
    job = create_job(client, auth_headers, RETURNS_JOB)
    data = SyncJobRunCreate(
        sync_job_id=job["id"], integrated_account_id=upstream_for(SANDBOX).account_id
    )

    def create() -> str:
        """The run's id, or the error code."""
        try:
            with session_scope(settings) as session:
                return create_run(
                    session, None, environment_id=job["environment_id"], data=data,
                    settings=settings,
                ).id  # fmt: skip
        except ApiError as exc:
            return f"{exc.status_code} {exc.code}"

    with (
        _run_inserts_wait_together(settings, threading.Barrier(creates)),
        ThreadPoolExecutor(max_workers=creates) as pool,
    ):
        answers = [f.result() for f in [pool.submit(create) for _ in range(creates)]]

    with session_scope(settings) as session:
        active = session.exec(
            select(SyncJobRun.id).where(col(SyncJobRun.status).in_(ACTIVE_STATES))
        ).all()
    assert len(active) == 1
    assert sorted(answers) == sorted([active[0]] + ["409 CONFLICT"] * (creates - 1))
