"""A sync page's path: its fenced write (one statement on PostgreSQL, three on SQLite), the
next page fetched while a page is written, the after-step transform over a whole page, and
the worker's preload. Every test runs on the configured database (SQLite, or PostgreSQL with
``TEST_DATABASE_URL``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
import redis
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.pool import QueuePool
from sqlmodel import col, select

from core.errors import ApiError
from core.settings import Settings
from platform_api.db import get_engine, session_scope
from platform_api.sync.lease import LeaseLost, Page, PageWriter, claim_run
from platform_api.sync.reaper import reap
from platform_api.sync.runner import execute_run
from platform_api.tables.common import utcnow
from platform_api.tables.outbox import OutboxEvent
from platform_api.tables.sync import CachedReturn, SyncJobRun
from platform_api.unified.expressions import evaluate
from platform_api.unified.steps import map_each
from sandbox import data as sandbox_data
from tests.platform_api.sync.helpers import RETURNS_JOB, create_job, start_run, take_lease_away
from tests.platform_api.unified.fakes.common import Scripted
from tests.platform_api.unified.providers import SANDBOX

pytestmark = pytest.mark.db

# 250 returns: three pages of 100.
THREE_PAGES = replace(SANDBOX, build=lambda: sandbox_data.seed(returns=250))


def _claimed(
    client: TestClient, headers: dict[str, str], settings: Settings, account: str
) -> tuple[str, int]:
    """A run of the returns job, claimed as a worker would: its id and lease token."""
    job = create_job(client, headers, RETURNS_JOB)
    run_id = start_run(client, headers, job["id"], account)
    with session_scope(settings) as session:
        token = claim_run(session, run_id, utcnow())
    assert token is not None
    return run_id, token


def _page(run_id: str, token: int, account: str, number: int, *ids: str) -> Page:
    records = [{"id": key, "status": "open", "updated_at": "2026-01-09T21:00:00Z",
                "line_items": [], "note": "Grüße"} for key in ids]  # fmt: skip
    stats = {"wms/returns": {"pages": number, "records": 100 * number, "errors": 0}}
    return Page(
        run_id=run_id, token=token, heartbeat_at=utcnow(), resource_stats=stats,
        environment_id="development", integrated_account_id=account, webhook_id=None,
        cached=True, records=records,
        payload={"sync_job_run_id": run_id, "resource": "wms/returns", "page": number,
                 "records": records},
    )  # fmt: skip


def _page_events(settings: Settings, run_id: str) -> list[dict[str, Any]]:
    with session_scope(settings) as session:
        events = session.exec(
            select(OutboxEvent)
            .where(col(OutboxEvent.event_type) == "sync_job_run:record")
            .order_by(col(OutboxEvent.id))
        ).all()
        return [e.payload for e in events if e.payload.get("sync_job_run_id") == run_id]


def _kinds(settings: Settings, run_id: str) -> list[str]:
    with session_scope(settings) as session:
        events = session.exec(
            select(OutboxEvent)
            .where(col(OutboxEvent.event_type).startswith("sync_job_run:"))
            .order_by(col(OutboxEvent.id))
        ).all()
        return [
            e.event_type.removeprefix("sync_job_run:")
            for e in events
            if e.payload.get("sync_job_run_id") == run_id
        ]


def _cached(settings: Settings, account: str) -> dict[str, dict[str, Any]]:
    with session_scope(settings) as session:
        rows = session.exec(
            select(CachedReturn).where(col(CachedReturn.integrated_account_id) == account)
        ).all()
        return {row.id: row.record for row in rows}


def _run_row(settings: Settings, run_id: str) -> SyncJobRun:
    with session_scope(settings) as session:
        run = session.get(SyncJobRun, run_id)
        assert run is not None
        return run


def test_a_page_write_under_the_lease_writes_the_rows_the_event_and_the_stats(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
) -> None:
    account = upstream_for(SANDBOX).account_id
    run_id, token = _claimed(client, auth_headers, settings, account)
    writer = PageWriter(settings)
    try:
        writer.write(_page(run_id, token, account, 1, "rma_1", "rma_2"))
        writer.write(_page(run_id, token, account, 2, "rma_2", "rma_3"))
    finally:
        writer.close()

    assert sorted(_cached(settings, account)) == ["rma_1", "rma_2", "rma_3"]
    assert _cached(settings, account)["rma_1"]["note"] == "Grüße"
    assert [(e["page"], len(e["records"])) for e in _page_events(settings, run_id)] == [
        (1, 2),
        (2, 2),
    ]
    run = _run_row(settings, run_id)
    assert run.resource_stats == {"wms/returns": {"pages": 2, "records": 200, "errors": 0}}
    assert run.status == "running" and run.lease_token == token


def test_a_page_of_another_resource_writes_its_event_and_no_cache_row(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
) -> None:
    account = upstream_for(SANDBOX).account_id
    run_id, token = _claimed(client, auth_headers, settings, account)
    writer = PageWriter(settings)
    try:
        writer.write(replace(_page(run_id, token, account, 1, "ord_1"), cached=False))
    finally:
        writer.close()

    assert _cached(settings, account) == {}
    assert [e["page"] for e in _page_events(settings, run_id)] == [1]


@pytest.mark.parametrize("taken_by", ["reaper", "stop"])
def test_a_page_write_after_the_lease_is_lost_writes_nothing(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
    taken_by: str,
) -> None:
    account = upstream_for(SANDBOX).account_id
    run_id, token = _claimed(client, auth_headers, settings, account)
    take_lease_away(taken_by, client, auth_headers, settings, redis_client, run_id)
    ended = _run_row(settings, run_id)

    writer = PageWriter(settings)
    try:
        with pytest.raises(LeaseLost):
            writer.write(_page(run_id, token, account, 1, "rma_1", "rma_2"))
        # The writer stays usable: a later write is refused the same way.
        with pytest.raises(LeaseLost):
            writer.write(_page(run_id, token, account, 2, "rma_3"))
    finally:
        writer.close()

    assert _cached(settings, account) == {}
    assert _page_events(settings, run_id) == []
    after = _run_row(settings, run_id)
    assert (after.status, after.resource_stats, after.heartbeat_at, after.lease_token) == (
        ended.status,
        ended.resource_stats,
        ended.heartbeat_at,
        ended.lease_token,
    )


def test_a_page_write_goes_on_after_its_connection_dropped(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
) -> None:
    if get_engine(settings).dialect.name != "postgresql":
        pytest.skip("the held connection is PostgreSQL's (SQLite writes in a session)")
    account = upstream_for(SANDBOX).account_id
    run_id, token = _claimed(client, auth_headers, settings, account)
    writer = PageWriter(settings)
    try:
        writer.write(_page(run_id, token, account, 1, "rma_1"))
        held = writer._held()
        pid = held.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        with get_engine(settings).connect() as other:
            other.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        writer.write(_page(run_id, token, account, 2, "rma_2"))
    finally:
        writer.close()

    assert sorted(_cached(settings, account)) == ["rma_1", "rma_2"]
    assert [e["page"] for e in _page_events(settings, run_id)] == [1, 2]


def test_a_run_stopped_after_a_page_drops_the_page_being_fetched(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
) -> None:
    upstream = upstream_for(THREE_PAGES)
    job = create_job(client, auth_headers, RETURNS_JOB)
    run_id = start_run(client, auth_headers, job["id"], upstream.account_id)
    pages: list[int] = []
    asked_before = len(upstream.state.seen("/store/returns"))

    def stop_after_the_first_page(resource: str, page: int, records: int) -> None:
        pages.append(page)
        if page == 1:
            stopped = client.post(f"/v1/sync-job-run/{run_id}/stop", headers=auth_headers)
            assert stopped.status_code == 200, stopped.text

    status = asyncio.run(execute_run(settings, run_id, stop_after_the_first_page))

    assert status == "stopped" and pages == [1]
    # The second page's write is refused; the third was asked for meanwhile, never a fourth.
    assert len(upstream.state.seen("/store/returns")) - asked_before <= 3
    assert len(_cached(settings, upstream.account_id)) == 100
    assert _kinds(settings, run_id) == ["started", "record", "failed"]  # the stop's end


def test_a_provider_error_on_the_next_page_comes_after_the_page_before_is_written(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
) -> None:
    upstream = upstream_for(THREE_PAGES)
    job = create_job(client, auth_headers, RETURNS_JOB)
    run_id = start_run(client, auth_headers, job["id"], upstream.account_id)
    # Each page is two requests (the returns, then their products): the second page's first.
    second_page = len(upstream.state.requests) + 3
    upstream.state.fail_on[second_page] = Scripted(400, {"error": {"message": "no"}})
    pages: list[int] = []

    status = asyncio.run(
        execute_run(settings, run_id, lambda resource, page, records: pages.append(page))
    )

    assert status == "failed" and pages == [1]
    run = _run_row(settings, run_id)
    assert run.resource_stats["wms/returns"] == {"pages": 1, "records": 100, "errors": 1}
    assert len(_cached(settings, upstream.account_id)) == 100
    assert _kinds(settings, run_id) == ["started", "record", "failed"]


def test_a_lost_lease_on_a_page_stops_the_run_with_the_pages_before_it(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    redis_client: redis.Redis,
    upstream_for: Callable[..., Any],
) -> None:
    upstream = upstream_for(THREE_PAGES)
    job = create_job(client, auth_headers, RETURNS_JOB)
    run_id = start_run(client, auth_headers, job["id"], upstream.account_id)

    def reap_after_the_second_page(resource: str, page: int, records: int) -> None:
        if page == 2:
            later = utcnow() + timedelta(seconds=settings.sync_run_stale_s + 1)
            assert reap(settings, redis_client, now=later)["failed"] == 1

    assert asyncio.run(execute_run(settings, run_id, reap_after_the_second_page)) == "failed"
    assert len(_cached(settings, upstream.account_id)) == 200
    assert [e["page"] for e in _page_events(settings, run_id)] == [1, 2]
    assert _kinds(settings, run_id) == ["started", "record", "record", "failed"]


@pytest.mark.parametrize("overlap", [True, False])
def test_a_run_writes_every_page_in_order_overlapped_or_not(
    client: TestClient,
    auth_headers: dict[str, str],
    settings: Settings,
    upstream_for: Callable[..., Any],
    overlap: bool,
) -> None:
    upstream = upstream_for(THREE_PAGES)
    job = create_job(client, auth_headers, RETURNS_JOB)
    run_id = start_run(client, auth_headers, job["id"], upstream.account_id)
    pages: list[int] = []

    status = asyncio.run(
        execute_run(
            settings,
            run_id,
            lambda resource, page, records: pages.append(page),
            overlap=overlap,
        )
    )

    assert status == "completed" and pages == [1, 2, 3]
    events = _page_events(settings, run_id)
    assert [(e["page"], len(e["records"])) for e in events] == [(1, 100), (2, 100), (3, 50)]
    assert sorted(_cached(settings, upstream.account_id)) == sorted(upstream.data.returns)
    assert _run_row(settings, run_id).resource_stats["wms/returns"] == {
        "pages": 3,
        "records": 250,
        "errors": 0,
    }


# The after-step transform: one evaluation over the page, the same as record by record.
RECORDS = [
    {"id": "a", "lines": [{"p": "x"}, {"p": "y"}], "n": 1},
    {"id": "b", "lines": [{"p": "y"}], "n": 2},
    {"id": "c", "lines": [], "n": 3},
]
BINDINGS = {"steps": {"skus": {"x": "SKU-X", "y": "SKU-Y"}}}


@pytest.mark.parametrize(
    "source",
    [
        '$merge([$, {"lines": [lines.$merge([$, {"sku": $lookup($steps.skus, p)}])]}])',
        'n > 1 ? {"id": id} : undefined',  # a record may map to nothing
        "[id]",  # an array stays one
        "lines.p",  # a sequence: one value or several
        "$$.id",  # the root: record by record
        "n % 2",  # a parent or a modulo: record by record
        "$count($records)",  # bindings are the same
    ],
)
def test_a_page_transform_maps_each_record_as_record_by_record(source: str) -> None:
    bindings = {**BINDINGS, "records": RECORDS}
    assert map_each(source, RECORDS, bindings) == [evaluate(source, r, bindings) for r in RECORDS]


def test_a_page_transform_that_fails_gives_the_record_by_record_error() -> None:
    source = '$number("not a number" & id)'
    with pytest.raises(ApiError) as expected:
        evaluate(source, RECORDS[0], BINDINGS)
    with pytest.raises(ApiError) as raised:
        map_each(source, RECORDS, BINDINGS)
    assert (raised.value.code, raised.value.message) == (
        expected.value.code,
        expected.value.message,
    )


def test_the_worker_preload_leaves_no_connection_open(settings: Settings, db: None) -> None:
    from platform_api.tasks.sync import preload

    preload()
    pool = get_engine(settings).pool
    assert isinstance(pool, QueuePool)
    # No connection crosses the fork: none checked out, none kept in the pool.
    assert (pool.checkedout(), pool.checkedin()) == (0, 0)
