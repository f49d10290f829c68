"""The queue tasks of sync: executing a run (queue ``sync``), a cron trigger's tick, and the
reaper rq-scheduler runs every minute."""

from __future__ import annotations

import asyncio
import gc

import anyio
import sqlalchemy as sa
import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import configure_mappers

from core.settings import get_settings
from platform_api.db import get_engine, session_scope
from platform_api.integrations.catalog import get_catalog
from platform_api.queueing.queues import get_redis
from platform_api.services.api_log_writer import flush_api_log
from platform_api.sync.admission import admit_after_run
from platform_api.sync.reaper import reap
from platform_api.sync.runner import execute_run
from platform_api.sync.triggers import fire
from platform_api.unified import upstream
from platform_api.unified.expressions import page_mapping
from platform_api.unified.resource_map import get_resources
from platform_api.unified.schemas import RECORD_SCHEMAS, validate_records

log = structlog.get_logger(__name__)

# Allocations between two collections of the youngest generation while a run executes.
RUN_GC_THRESHOLD = 50_000


def preload() -> None:
    """Do once, when the worker starts (before it forks a work horse per run), what every
    run would otherwise do after it started, before its first page: load the catalog and the
    resource maps (their expressions compile), compile the list pages' mappings, build the
    schema checks, load the TLS roots and aiohttp's and anyio's lazy modules, and connect to
    the database once (the dialect's first-connect queries)."""
    for name in get_catalog():
        resources = get_resources(name)
        for spec in resources.resources.values() if resources is not None else ():
            for method in [*spec.methods.values(), *spec.custom.values()]:
                if spec.record and method.records is not None:
                    page_mapping(method.records, spec.record)
    for category, resource in RECORD_SCHEMAS:
        validate_records(category, resource, [])
    configure_mappers()
    settings = get_settings()

    async def _open_and_close() -> None:
        upstream.get_session(settings)
        await upstream.close_sessions()
        await anyio.to_thread.run_sync(int)  # loads anyio's asyncio backend

    asyncio.run(_open_and_close())
    try:
        with session_scope(settings) as session:
            session.execute(sa.text("SELECT 1"))
    except SQLAlchemyError as exc:  # best effort: the worker starts even if the DB is down
        log.warning("sync_preload_skipped", error=str(exc))
    finally:
        # No pooled connection may cross the fork; work horses open their own.
        get_engine(settings).dispose()


def execute(run_id: str) -> str | None:
    """Execute the run; returns its final status. Its place in its environment then goes to
    the next waiting run."""
    settings = get_settings()
    # A page's records are freed as it is written (reference counts); collections every 700
    # allocations would only scan each page's containers on their way (a few % of a page).
    thresholds = gc.get_threshold()
    gc.set_threshold(RUN_GC_THRESHOLD, *thresholds[1:])
    try:
        return asyncio.run(execute_run(settings, run_id))
    finally:
        gc.set_threshold(*thresholds)
        # A work horse exits without running exit handlers: write its API-log rows now.
        flush_api_log(settings)
        admit_after_run(settings, get_redis(settings), run_id)


def fire_trigger(trigger_id: str) -> str | None:
    """A cron tick of a trigger: queue a run of its job; returns the run id."""
    settings = get_settings()
    return fire(settings, get_redis(settings), trigger_id)


def reap_runs() -> dict[str, int]:
    """rq-scheduler's minutely job: fail runs whose worker died, queue lost runs again."""
    settings = get_settings()
    return reap(settings, get_redis(settings))
