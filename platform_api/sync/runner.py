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

import structlog

from core.errors import ApiError
from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services.events import record_event
from platform_api.services.unified import unified_request
from platform_api.sync import cache
from platform_api.sync.jobs import PLACEHOLDER, order_resources
from platform_api.tables.common import utcnow
from platform_api.tables.sync import SyncJob, SyncJobRun

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


def bind_parent(query: dict[str, str], parent: dict[str, Any] | None) -> dict[str, str]:
    """``query`` with every ``{{parent.<field>}}`` replaced by the parent record's value."""
    if parent is None:
        return dict(query)
    return {key: PLACEHOLDER.sub(lambda m: _field(parent, m.group(1)), value)
            for key, value in query.items()}  # fmt: skip


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
        self.account_id = run.integrated_account_id
        self.webhook_id = run.webhook_id
        self.job = job
        self.stats: dict[str, dict[str, int]] = {
            r["resource"]: {"pages": 0, "records": 0, "errors": 0} for r in job.resources
        }
        # Records are kept only for resources others depend on; returns' ids always (cheap),
        # to find the cached ones that disappeared upstream.
        self.parents = {r["depends_on"] for r in job.resources if r.get("depends_on")}
        self.returns_seen: set[str] = set()

    def event(self, session: Any, event_type: str, **payload: Any) -> None:
        record_event(
            session,
            environment_id=self.environment_id,
            event_type=event_type,
            payload={"sync_job_run_id": self.run_id, "sync_job_id": self.job.id,
                     "integrated_account_id": self.account_id, **payload},
            webhook_id=self.webhook_id,
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
        self,
        spec: dict[str, Any],
        category: str,
        name: str,
        record_id: str | None,
        query: dict[str, str],
        cursor: str | None,
    ) -> Any:
        """One page through the unified engine; a provider 429 that outlasts the engine's
        own retries puts the run in ``rate_limited`` while it waits, then it goes on."""
        waits = 0
        while True:
            try:
                with session_scope(self.settings) as session:
                    return await unified_request(
                        session, self.settings, environment_id=self.environment_id,
                        account_id=self.account_id, category=category, resource=name,
                        method=spec["method"], path=f"/unified/{spec['resource']}",
                        http_method="GET", record_id=record_id, query=query,
                        limit=PAGE_SIZE, cursor=cursor,
                    )  # fmt: skip
            except ApiError as exc:
                if exc.code != "RATE_LIMITED" or waits >= self.settings.sync_rate_limit_max_waits:
                    self.stats[spec["resource"]]["errors"] += 1
                    raise
                waits += 1
                wait_s = float((exc.headers or {}).get("Retry-After", "1"))
                self._set_status("rate_limited")
                await asyncio.sleep(wait_s)
                self._set_status("running")

    def _set_status(self, status: str) -> None:
        with session_scope(self.settings) as session:
            run = session.get(SyncJobRun, self.run_id)
            if run is None or run.status == "stopped":
                raise _Stopped
            run.status, run.heartbeat_at = status, utcnow()
            session.add(run)

    async def _fetch(self, spec: dict[str, Any], parent: dict[str, Any] | None) -> list[dict]:
        """Every page of one resource (for one parent record); returns its records."""
        category, _, name = spec["resource"].partition("/")
        query = bind_parent(spec.get("query") or {}, parent)
        record_id = None
        if spec["method"] == "get":
            record_id = query.pop("id", None) or (parent or {}).get("id")
        kept: list[dict] = []
        cursor: str | None = None
        page = 0
        while True:
            result = await self._page(spec, category, name, record_id, query, cursor)
            records = result["result"] if spec["method"] == "list" else [result]
            page += 1
            stats = self.stats[spec["resource"]]
            stats["pages"] += 1
            stats["records"] += len(records)
            with session_scope(self.settings) as session:
                if spec["resource"] == "wms/returns":
                    cache.upsert_returns(
                        session, environment_id=self.environment_id,
                        account_id=self.account_id, run_id=self.run_id, records=records,
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
            cursor = result.get("next_cursor") if spec["method"] == "list" else None
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
        # parent (depends_on) sees only the parents' returns.
        if any(
            r["resource"] == "wms/returns" and not r.get("depends_on") for r in self.job.resources
        ):
            with session_scope(self.settings) as session:
                cache.remove_missing(session, account_id=self.account_id, seen=self.returns_seen)
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
    with session_scope(settings) as session:
        final = session.get(SyncJobRun, run_id)
        return final.status if final is not None else None
