"""Executing a sync run: every resource in dependency order, every page through the same
unified engine as live calls (mappings, error mapping, API log), events through the outbox.

Each page is committed on its own (stats, events, cache rows), so a run that fails half-way
keeps what it fetched and deletes nothing from the cache; only a complete listing of returns
removes the cached returns that disappeared upstream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import structlog

from core.errors import ApiError
from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services.events import record_event
from platform_api.services.unified import proxy_request, unified_request
from platform_api.sync import cache
from platform_api.sync.jobs import PLACEHOLDER, order_resources
from platform_api.tables.common import utcnow
from platform_api.tables.sync import SyncJob, SyncJobRun
from platform_api.unified import upstream
from platform_api.unified.engine import as_python
from platform_api.unified.requests import ProxyRequest, UnifiedRequest
from platform_api.unified.resource_map import get_resources

log = structlog.get_logger(__name__)

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


class _Stopped(Exception):
    """The run was stopped (``POST /v1/sync-job-run/{id}/stop``) while it ran."""


# Called after every committed page: (resource, page number, records in the page).
PageCallback = Callable[[str, int, int], None]


class _Run:
    def __init__(
        self,
        settings: Settings,
        run: SyncJobRun,
        job: SyncJob,
        on_page: PageCallback | None = None,
    ) -> None:
        self.on_page = on_page
        self.settings = settings
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

    def event(self, session: Any, event_type: str, **payload: Any) -> None:
        record_event(
            session,
            environment_id=self.environment_id,
            event_type=event_type,
            payload={"sync_job_run_id": self.run_id, "sync_job_id": self.job.id,
                     "integrated_account_id": self.integrated_account_id, **payload},
            settings=self.settings, webhook_id=self.webhook_id,
        )  # fmt: skip

    def finish(self, status: str, error: str | None = None) -> None:
        with session_scope(self.settings) as session:
            run = session.get(SyncJobRun, self.run_id)
            if run is None:  # the account was deleted meanwhile: nothing to report to
                return
            if run.status == "stopped":  # stopped after its last page: it stays stopped
                run.resource_stats = self.stats
                session.add(run)
                return
            run.status, run.error, run.finished_at = status, error, utcnow()
            run.resource_stats = self.stats
            session.add(run)
            if status == "completed":
                self.event(session, "sync_job_run:completed", resource_stats=self.stats)
            else:
                self.event(session, "sync_job_run:failed", error=error, resource_stats=self.stats)

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
                wait_s = float((exc.headers or {}).get("Retry-After", "1"))
                self._set_status("rate_limited")
                await asyncio.sleep(wait_s)
                self._set_status("running")

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

    def _set_status(self, status: str) -> None:
        with session_scope(self.settings) as session:
            run = session.get(SyncJobRun, self.run_id)
            if run is None or run.status == "stopped":
                raise _Stopped
            run.status, run.heartbeat_at = status, utcnow()
            session.add(run)

    async def _fetch(self, spec: dict[str, Any], parent: dict[str, Any] | None) -> list[Any]:
        """Every page of one resource (for one parent record); returns its records."""
        query = bind_parent(spec.get("query") or {}, parent)
        target: str | None = None  # the proxy path, or the record id of a unified get
        if spec["resource"].startswith("proxy/"):
            target = bind_path(spec["resource"].removeprefix("proxy/"), parent)
        elif self.shapes[spec["resource"]] == "get":
            target = query.pop("id", None) or (parent or {}).get("id")
        kept: list[Any] = []
        cursor: str | None = None
        page = 0
        while True:
            records, cursor = await self._page(spec, target, query, cursor)
            page += 1
            stats = self.stats[spec["resource"]]
            stats["pages"] += 1
            stats["records"] += len(records)
            with session_scope(self.settings) as session:
                if spec["resource"] == "wms/returns":
                    cache.upsert_returns(
                        session, environment_id=self.environment_id,
                        integrated_account_id=self.integrated_account_id, run_id=self.run_id,
                        records=records,
                    )  # fmt: skip
                run = session.get(SyncJobRun, self.run_id)
                if run is not None:
                    run.resource_stats = self.stats
                    run.heartbeat_at = utcnow()
                    session.add(run)
                if run is None or run.status == "stopped":
                    raise _Stopped
                self.event(session, "sync_job_run:record", resource=spec["resource"],
                            page=page, records=records)  # fmt: skip
            if self.on_page is not None:
                self.on_page(spec["resource"], page, len(records))
            if spec["resource"] == "wms/returns":
                self.returns_seen.update(str(r["id"]) for r in records)
            if spec["resource"] in self.parents and len(kept) < MAX_PARENT_RECORDS:
                kept.extend(records[: MAX_PARENT_RECORDS - len(kept)])
            if not cursor:
                return kept

    async def execute(self) -> None:
        fetched: dict[str, list[dict]] = {}
        try:
            for spec in order_resources(self.job.resources):
                parents: list[dict | None] = (
                    list(fetched.get(spec["depends_on"], [])) if spec.get("depends_on") else [None]
                )
                records: list[dict] = []
                for parent in parents:
                    records.extend(await self._fetch(spec, parent))
                fetched[spec["resource"]] = records
        except _Stopped:
            log.info("sync_run_stopped", run_id=self.run_id)
            return
        except ApiError as exc:
            log.warning("sync_run_failed", run_id=self.run_id, error=exc.code)
            self.finish("failed", f"{exc.code}: {exc.message}"[:500])
            return
        # Only a complete listing of every return says which ones are gone; a listing per
        # parent (depends_on), a filtered one or a custom method sees only some of them.
        if any(_lists_every_return(r) for r in self.job.resources):
            with session_scope(self.settings) as session:
                cache.remove_missing(
                    session,
                    integrated_account_id=self.integrated_account_id,
                    seen=self.returns_seen,
                )
        self.finish("completed")


async def execute_run(
    settings: Settings, run_id: str, on_page: PageCallback | None = None
) -> str | None:
    """Run ``run_id`` if it is queued; returns its final status (None: nothing to do)."""
    with session_scope(settings) as session:
        run = session.get(SyncJobRun, run_id)
        if run is None or run.status != "queued":
            return None
        job = session.get(SyncJob, run.sync_job_id)
        run.started_at = run.heartbeat_at = utcnow()
        run.status = "running" if job is not None else "failed"
        if job is None:
            run.error, run.finished_at = "the sync job was deleted before the run started", utcnow()
        session.add(run)
        if job is None:
            return "failed"
        session.expunge(job)
        state = _Run(settings, run, job, on_page)
        state.event(session, "sync_job_run:started")
    try:
        await state.execute()
    except Exception:
        log.exception("sync_run_crashed", run_id=run_id)
        state.finish("failed", "internal error; the run's log has the details")
    finally:
        await upstream.close_sessions()  # the run's loop ends with it
    with session_scope(settings) as session:
        final = session.get(SyncJobRun, run_id)
        return final.status if final is not None else None
