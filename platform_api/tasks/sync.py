"""The queue tasks of sync: executing a run (queue ``sync``), a cron trigger's tick, and the
reaper rq-scheduler runs every minute."""

from __future__ import annotations

import asyncio

from core.settings import get_settings
from platform_api.queueing.queues import get_redis
from platform_api.services.api_log_writer import flush_api_log
from platform_api.sync.admission import admit_after_run
from platform_api.sync.reaper import reap
from platform_api.sync.runner import execute_run
from platform_api.sync.triggers import fire


def execute(run_id: str) -> str | None:
    """Execute the run; returns its final status. Its place in its environment then goes to
    the next waiting run."""
    settings = get_settings()
    try:
        return asyncio.run(execute_run(settings, run_id))
    finally:
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
