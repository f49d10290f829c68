"""Executing a sync run: every resource in dependency order, every page through the same
unified engine as live calls (mappings, error mapping, API log), events through the outbox.

Each page is committed on its own (stats, events, cache rows), so a run that fails half-way
keeps what it fetched and deletes nothing from the cache; only a complete listing of returns
removes the cached returns that disappeared upstream.

A worker holds a run under a lease (``lease.py``): every write of the worker is fenced by
the token it claimed the run with, so a run taken from its worker (reaped, stopped) refuses
the rest of that worker's writes and the worker stops quietly.

The next page is asked of the provider while a page is written (the write runs in a thread:
both mostly wait, on the provider and on the database). Pages are still written one at a
time and in order, and a page's provider error is raised only once the page before it is
written; a lost lease or an error cancels the page being fetched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from urllib.parse import quote

import structlog
from sqlmodel import Session

from core.errors import ApiError
from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services.events import record_event
from platform_api.services.unified import proxy_request, unified_request
from platform_api.sync import cache
from platform_api.sync.jobs import PLACEHOLDER, order_resources
from platform_api.sync.lease import (
    LEASED_STATES,
    LeaseLost,
    Page,
    PageWriter,
    claim_run,
    fence,
)
from platform_api.tables.common import utcnow
from platform_api.tables.sync import SyncJob, SyncJobRun
from platform_api.unified import upstream
from platform_api.unified.engine import as_python
from platform_api.unified.requests import ProxyRequest, UnifiedRequest
from platform_api.unified.resource_map import get_resources
from platform_api.unified.upstream import parse_retry_after

log = structlog.get_logger(__name__)

__all__ = ["LEASED_STATES", "LeaseLost", "claim_run", "execute_run", "fence"]

PAGE_SIZE = 100
# Parent records kept in memory for the resources that depend on them (bounded: a child
# resource runs for at most this many parents).
MAX_PARENT_RECORDS = 10_000


def _field(record: dict[str, Any], path: str) -> str:
    value: Any = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        raise ApiError(400, "INVALID_REQUEST", f"the parent record has no {path!r}")
    return str(value)


def bind_path(path: str, parent: dict[str, Any] | None) -> str:
    """A proxy path with every ``{{parent.<field>}}`` replaced by the parent's value, each one
    percent-encoded whole (a value cannot add path segments)."""
    if parent is None:
        return path
    return PLACEHOLDER.sub(lambda m: quote(_field(parent, m.group(1)), safe=""), path)


def bind_parent(query: dict[str, str], parent: dict[str, Any] | None) -> dict[str, str]:
    """``query`` with every ``{{parent.<field>}}`` replaced by the parent record's value."""
    if parent is None:
        return dict(query)
    return {key: PLACEHOLDER.sub(lambda m: _field(parent, m.group(1)), value)
            for key, value in query.items()}  # fmt: skip


def _shapes(job: SyncJob) -> dict[str, str]:
    """Each resource's answer shape, ``list`` or ``get`` (a custom method runs like one)."""
    resource_map = get_resources(job.integration_name)
    shapes = {}
    for spec in job.resources:
        _, _, name = spec["resource"].partition("/")
        found = resource_map.resources.get(name) if resource_map is not None else None
        is_proxy = spec["resource"].startswith("proxy/")
        shapes[spec["resource"]] = (
            found.shape_of(spec["method"]) if found and not is_proxy else spec["method"]
        )
    return shapes


def _lists_every_return(spec: dict[str, Any]) -> bool:
    return (
        spec["resource"] == "wms/returns"
        and spec["method"] == "list"
        and not spec.get("depends_on")
        and not spec.get("query")
    )


CRASHED = "internal error; the run's log has the details"

# Called after every committed page: (resource, page number, records in the page).
PageCallback = Callable[[str, int, int], None]
# How a run waits (asyncio.sleep; tests record the waits instead) and reads the time.
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], datetime]


class _Run:
    def __init__(
        self,
        settings: Settings,
        run: SyncJobRun,
        job: SyncJob,
        token: int,
        on_page: PageCallback | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = utcnow,
        overlap: bool = True,
    ) -> None:
        self.on_page = on_page
        self.overlap = overlap
        self.writer = PageWriter(settings)
        self.settings = settings
        self.token = token
        self.sleep = sleep
        self.clock = clock
        self.run_id = run.id
        self.environment_id = run.environment_id
        self.integrated_account_id = run.integrated_account_id
        self.webhook_id = run.webhook_id
        self.job = job
        self.stats: dict[str, dict[str, int]] = {
            r["resource"]: {"pages": 0, "records": 0, "errors": 0} for r in job.resources
        }
        # Records are kept only for resources others depend on; returns' ids always (cheap),
        # to find the cached ones that disappeared upstream.
        self.parents = {r["depends_on"] for r in job.resources if r.get("depends_on")}
        self.returns_seen: set[str] = set()
        self.shapes = _shapes(job)

    def _payload(self, **payload: Any) -> dict[str, Any]:
        return {"sync_job_run_id": self.run_id, "sync_job_id": self.job.id,
                "integrated_account_id": self.integrated_account_id, **payload}  # fmt: skip

    def event(self, session: Any, event_type: str, **payload: Any) -> None:
        record_event(
            session, environment_id=self.environment_id, event_type=event_type,
            payload=self._payload(**payload), settings=self.settings, webhook_id=self.webhook_id,
        )  # fmt: skip

    @contextmanager
    def _leased(self, **values: Any) -> Iterator[Session]:
        """A transaction of this worker's writes, opened by a fenced write of the run row (its
        heartbeat and ``values``); LeaseLost, and nothing written, once the lease is gone."""
        with session_scope(self.settings) as session:
            fence(
                session, run_id=self.run_id, token=self.token, heartbeat_at=self.clock(), **values
            )
            yield session

    def _touch(self, **values: Any) -> None:
        """A fenced write of the run row alone: its heartbeat, and ``values``."""
        with self._leased(**values):
            pass

    def _complete(self) -> None:
        with self._leased(
            status="completed", finished_at=self.clock(), resource_stats=self.stats
        ) as session:
            # Only a complete listing of every return says which ones are gone; a listing per
            # parent (depends_on), a filtered one or a custom method sees only some of them.
            if any(_lists_every_return(r) for r in self.job.resources):
                cache.remove_missing(
                    session,
                    integrated_account_id=self.integrated_account_id,
                    seen=self.returns_seen,
                )
            self.event(session, "sync_job_run:completed", resource_stats=self.stats)

    def _fail(self, error: str) -> None:
        with self._leased(
            status="failed", error=error, finished_at=self.clock(), resource_stats=self.stats
        ) as session:
            self.event(session, "sync_job_run:failed", error=error, resource_stats=self.stats)

    def fail_after_crash(self) -> None:
        """Record a run that crashed as failed, unless it is no longer this worker's."""
        try:
            self._fail(CRASHED)
        except LeaseLost:
            self._log_lease_lost()

    def _log_lease_lost(self) -> None:
        with session_scope(self.settings) as session:
            run = session.get(SyncJobRun, self.run_id)
            status = run.status if run is not None else None
        log.info("sync_run_lease_lost", run_id=self.run_id, lease_token=self.token, status=status)

    def _retry_after_s(self, exc: ApiError) -> float:
        """How long a 429 asks to wait (seconds or an HTTP date; none or garbage: the engine's
        default), at most ``sync_retry_after_max_s``."""
        asked = parse_retry_after(
            (exc.headers or {}).get("Retry-After"), default=self.settings.upstream_retry_default_s
        )
        return min(asked, self.settings.sync_retry_after_max_s)

    async def _wait_out(self, seconds: float) -> None:
        """Wait ``rate_limited`` for ``seconds``, in slices of at most
        ``sync_heartbeat_interval_s`` with a heartbeat after each: the reaper sees the run
        alive, and a run reaped or stopped meanwhile ends without waiting to the end."""
        self._touch(status="rate_limited")
        remaining = seconds
        while remaining > 0:
            step = min(remaining, self.settings.sync_heartbeat_interval_s)
            await self.sleep(step)
            remaining -= step
            if remaining > 0:
                self._touch()
        self._touch(status="running")

    async def _page(
        self, spec: dict[str, Any], target: str | None, query: dict[str, str], cursor: str | None
    ) -> tuple[list[Any], str | None]:
        """One page and the cursor of the next; a provider 429 that outlasts the engine's own
        retries puts the run in ``rate_limited`` while it waits, then it goes on."""
        waits = 0
        while True:
            try:
                if spec["resource"].startswith("proxy/"):
                    return await self._proxy_page(spec, target or "", query, cursor)
                return await self._unified_page(spec, target, query, cursor)
            except ApiError as exc:
                if exc.code != "RATE_LIMITED" or waits >= self.settings.sync_rate_limit_max_waits:
                    self.stats[spec["resource"]]["errors"] += 1
                    raise
                waits += 1
                await self._wait_out(self._retry_after_s(exc))

    async def _unified_page(
        self,
        spec: dict[str, Any],
        record_id: str | None,
        query: dict[str, str],
        cursor: str | None,
    ) -> tuple[list[Any], str | None]:
        category, _, name = spec["resource"].partition("/")
        asked = UnifiedRequest(
            environment_id=self.environment_id, integrated_account_id=self.integrated_account_id,
            category=category, resource=name, method=spec["method"], record_id=record_id,
            query=query, limit=PAGE_SIZE, cursor=cursor,
        )  # fmt: skip
        result = as_python(await unified_request(self.settings, asked))
        if self.shapes[spec["resource"]] == "list":
            return result["result"], result.get("next_cursor")
        return [result], None

    async def _proxy_page(
        self,
        spec: dict[str, Any],
        path: str,
        query: dict[str, str],
        cursor: str | None,
    ) -> tuple[list[Any], str | None]:
        listing = spec["method"] == "list"
        asked = ProxyRequest(
            environment_id=self.environment_id, integrated_account_id=self.integrated_account_id,
            http_method="GET", resource_path=path, query=query,
            limit=PAGE_SIZE if listing else None, cursor=cursor,
        )  # fmt: skip
        answer = await proxy_request(self.settings, asked)
        body = answer.body
        if listing and isinstance(body, dict) and isinstance(body.get("result"), list):
            return body["result"], body.get("next_cursor")
        if body is None:
            return [], None
        return (body if isinstance(body, list) else [body]), None

    async def _fetch(self, spec: dict[str, Any], parent: dict[str, Any] | None) -> list[Any]:
        """Every page of one resource (for one parent record); returns its records."""
        query = bind_parent(spec.get("query") or {}, parent)
        target: str | None = None  # the proxy path, or the record id of a unified get
        if spec["resource"].startswith("proxy/"):
            target = bind_path(spec["resource"].removeprefix("proxy/"), parent)
        elif self.shapes[spec["resource"]] == "get":
            target = query.pop("id", None) or (parent or {}).get("id")
        kept: list[Any] = []
        page = 0

        def fetch(cursor: str | None) -> Coroutine[Any, Any, tuple[list[Any], str | None]]:
            return self._page(spec, target, query, cursor)

        fetching: asyncio.Task[tuple[list[Any], str | None]] | None = None
        try:
            records, cursor = await fetch(None)
            while True:
                if cursor and self.overlap:
                    fetching = asyncio.create_task(fetch(cursor))
                page += 1
                stats = self.stats[spec["resource"]]
                stats["pages"] += 1
                stats["records"] += len(records)
                await self._write_page(spec["resource"], page, records)
                if self.on_page is not None:
                    self.on_page(spec["resource"], page, len(records))
                if spec["resource"] == "wms/returns":
                    self.returns_seen.update(str(r["id"]) for r in records)
                if spec["resource"] in self.parents and len(kept) < MAX_PARENT_RECORDS:
                    kept.extend(records[: MAX_PARENT_RECORDS - len(kept)])
                if not cursor:
                    return kept
                if fetching is None:
                    records, cursor = await fetch(cursor)
                else:
                    records, cursor = await fetching
                    fetching = None
        finally:
            if fetching is not None:
                await _discard(fetching)

    async def _write_page(self, resource: str, page: int, records: list[Any]) -> None:
        """The page's fenced write (the run's stats and heartbeat, the cached returns, the
        page's event); in a thread when pages overlap, so the next page's fetch goes on."""
        written = Page(
            run_id=self.run_id, token=self.token, heartbeat_at=self.clock(),
            # A copy: the next page's fetch may count an error meanwhile.
            resource_stats={name: dict(counts) for name, counts in self.stats.items()},
            environment_id=self.environment_id,
            integrated_account_id=self.integrated_account_id, webhook_id=self.webhook_id,
            cached=resource == "wms/returns", records=records,
            payload=self._payload(resource=resource, page=page, records=records),
        )  # fmt: skip
        if self.overlap:
            await asyncio.to_thread(self.writer.write, written)
        else:
            self.writer.write(written)

    async def _fetch_all(self) -> None:
        fetched: dict[str, list[dict]] = {}
        for spec in order_resources(self.job.resources):
            parents: list[dict | None] = (
                list(fetched.get(spec["depends_on"], [])) if spec.get("depends_on") else [None]
            )
            records: list[dict] = []
            for parent in parents:
                records.extend(await self._fetch(spec, parent))
            fetched[spec["resource"]] = records

    async def execute(self) -> None:
        """Fetch every resource, then record how the run ended. Once its lease is lost the run
        writes nothing more and ends quietly (whoever took it recorded its end)."""
        try:
            try:
                await self._fetch_all()
            except ApiError as exc:
                log.warning("sync_run_failed", run_id=self.run_id, error=exc.code)
                self._fail(f"{exc.code}: {exc.message}"[:500])
            else:
                self._complete()
        except LeaseLost:
            self._log_lease_lost()


async def _discard(task: asyncio.Task[Any]) -> None:
    """Cancel a page's fetch that is no longer wanted and wait for it to end; its outcome
    (the page, an error) is dropped."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # this run is being cancelled, not only the fetch
    except Exception:  # noqa: BLE001, S110 - the page is not wanted: neither is its error
        pass


def _start(
    settings: Settings,
    run_id: str,
    on_page: PageCallback | None,
    sleep: Sleep,
    clock: Clock,
    overlap: bool,
) -> _Run | str | None:
    """Claim the run and record it started; the run to execute, else its final status (None:
    nothing to do, "failed": its job was deleted before it started)."""
    with session_scope(settings) as session:
        token = claim_run(session, run_id, clock())
        if token is None:
            return None
        run = session.get(SyncJobRun, run_id)
        assert run is not None  # claimed in this transaction
        job = session.get(SyncJob, run.sync_job_id)
        if job is None:
            error = "the sync job was deleted before the run started"
            fence(session, run_id=run_id, token=token, status="failed", error=error,
                  finished_at=clock())  # fmt: skip
            return "failed"
        session.expunge(job)
        state = _Run(settings, run, job, token, on_page, sleep=sleep, clock=clock, overlap=overlap)
        state.event(session, "sync_job_run:started")
    return state


async def execute_run(
    settings: Settings,
    run_id: str,
    on_page: PageCallback | None = None,
    *,
    sleep: Sleep = asyncio.sleep,
    clock: Clock = utcnow,
    overlap: bool = True,
) -> str | None:
    """Run ``run_id`` if it is queued; returns its final status (None: nothing to do).
    ``sleep`` and ``clock`` are how the run waits out a provider 429 and reads the time;
    ``overlap=False`` fetches and writes its pages one after the other, on this thread (a
    profile times them there)."""
    state = _start(settings, run_id, on_page, sleep, clock, overlap)
    if not isinstance(state, _Run):
        return state
    try:
        await state.execute()
    except Exception:
        log.exception("sync_run_crashed", run_id=run_id)
        state.fail_after_crash()
    finally:
        state.writer.close()
        await upstream.close_sessions()  # the run's loop ends with it
    with session_scope(settings) as session:
        final = session.get(SyncJobRun, run_id)
        return final.status if final is not None else None
