"""Admission: one environment's or one account's backlog of sync runs cannot starve another's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from itertools import count
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlmodel import col, select

from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.queueing.queues import SYNC, get_queue
from platform_api.sync.admission import admit, admit_and_enqueue, pick_fairly
from platform_api.sync.reaper import reap
from platform_api.tables.common import utcnow
from platform_api.tables.sync import SyncJobRun
from switchyard.app import create_app
from tests.platform_api.factories import bearer
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, work
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.unified.providers import SANDBOX

_sequence = count()


def test_free_places_go_to_the_accounts_with_the_fewest_runs_under_way() -> None:
    waiting = [(f"a{i}", "acct_a") for i in range(100)] + [("b0", "acct_b"), ("c0", "acct_c")]
    assert pick_fairly(waiting, Counter(), 3) == ["a0", "b0", "c0"]
    # acct_a already has two under way: the others go first, then acct_a in its order.
    assert pick_fairly(waiting, Counter({"acct_a": 2}), 4) == ["b0", "c0", "a0", "a1"]
    assert pick_fairly(waiting, Counter(), 0) == []
    assert pick_fairly([], Counter(), 5) == []


def _waiting_runs(environment: str, account: str, how_many: int) -> list[str]:
    """``how_many`` queued runs (of distinct jobs) of the account, oldest first."""
    start = utcnow() - timedelta(hours=1)
    ids = []
    with session_scope(get_settings()) as session:
        for _ in range(how_many):
            n = next(_sequence)
            run = SyncJobRun(
                id=f"srun_{n:06d}", environment_id=environment, sync_job_id=f"sjob_{n:06d}",
                integrated_account_id=account, created_at=start + timedelta(seconds=n),
            )  # fmt: skip
            session.add(run)
            ids.append(run.id)
    return ids


def _admitted(environment: str) -> list[str]:
    with session_scope(get_settings()) as session:
        return list(
            session.exec(
                select(SyncJobRun.id)
                .where(col(SyncJobRun.environment_id) == environment)
                .where(col(SyncJobRun.admitted_at).is_not(None))
                .order_by(col(SyncJobRun.id))
            ).all()
        )


@pytest.mark.db
def test_an_environment_gets_no_more_places_than_its_cap(db: None, settings: Settings) -> None:
    busy = make_account("sandbox", {"api_key": "sk_test_a"}, base_url=None)
    calm = make_account("sandbox", {"api_key": "sk_test_b"}, base_url=None, tenant_id="t2")
    backlog = _waiting_runs("development", busy, 100)
    single = _waiting_runs("development", calm, 1)
    capped = settings.model_copy(update={"sync_max_runs_per_environment": 3})

    with session_scope(capped) as session:
        first = admit(session, capped, environment_id="development")
    # The account with one run is not behind the hundred: it gets the second place.
    assert first == [backlog[0], single[0], backlog[1]]
    with session_scope(capped) as session:
        assert admit(session, capped, environment_id="development") == []  # no place free

    with session_scope(capped) as session:  # one run ends: its place goes to the next
        session.get(SyncJobRun, backlog[0]).status = "completed"  # type: ignore[union-attr]
    with session_scope(capped) as session:
        assert admit(session, capped, environment_id="development") == [backlog[2]]
    assert len(_admitted("development")) == 4


@pytest.mark.db
def test_environments_interleave_on_the_sync_queue(
    db: None, settings: Settings, redis_client: redis.Redis
) -> None:
    busy = make_account("sandbox", {"api_key": "sk_test_a"}, base_url=None)
    other = make_account("sandbox", {"api_key": "sk_test_b"}, base_url=None, environment="staging")
    backlog = _waiting_runs("development", busy, 100)
    later = _waiting_runs("staging", other, 1)
    capped = settings.model_copy(update={"sync_max_runs_per_environment": 2})

    admit_and_enqueue(capped, redis_client, environment_id="development")
    admit_and_enqueue(capped, redis_client, environment_id="staging")
    # The staging run waits behind two development runs, not behind a hundred.
    assert get_queue(SYNC, redis_client).job_ids == [backlog[0], backlog[1], later[0]]


@pytest.mark.db
def test_a_run_waits_for_a_place_and_takes_it_when_one_ends(
    make_token: Callable[..., str],
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The front and the worker's work horses (forked from here) read the cap from settings.
    monkeypatch.setenv("SWITCHYARD_SYNC_MAX_RUNS_PER_ENVIRONMENT", "1")
    get_settings.cache_clear()
    headers = bearer(make_token("development"))
    account = upstream_for(SANDBOX).account_id
    try:
        with TestClient(create_app(get_settings())) as api:
            jobs = [create_job(api, headers, RETURNS_JOB)["id"] for _ in range(2)]
            first, second = (start_run(api, headers, job_id, account) for job_id in jobs)
            assert get_queue(SYNC, redis_client).job_ids == [first]  # the second waits its turn
            assert _admitted("development") == [first]

            work(redis_client)  # the first ends and hands its place on; the second runs next
            for run_id in (first, second):
                run = api.get(f"/v1/sync-job-run/{run_id}", headers=headers).json()
                assert run["status"] == "completed", run
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()


@pytest.mark.db
def test_the_reaper_admits_runs_a_dead_process_left_waiting(
    db: None, settings: Settings, redis_client: redis.Redis
) -> None:
    account = make_account("sandbox", {"api_key": "sk_test_a"}, base_url=None)
    waiting = _waiting_runs("development", account, 2)  # as if their creator died at commit
    assert reap(settings, redis_client)["admitted"] == 2
    assert get_queue(SYNC, redis_client).job_ids == waiting
    assert reap(settings, redis_client)["admitted"] == 0  # once
