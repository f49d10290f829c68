"""What rq-scheduler runs on a schedule, and the scheduler that stores it as the workers read it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import redis
from rq.job import Job
from rq.serializers import JSONSerializer
from rq_scheduler import Scheduler

from platform_api.jobs.queues import DEFAULT
from platform_api.jobs.retention import CRON as RETENTION_CRON
from platform_api.jobs.retention import JOB_ID as RETENTION_JOB_ID


class JsonJob(Job):
    """An RQ job stored as JSON, like every job the workers (JSON serializer) run;
    rq-scheduler creates and fetches jobs without a serializer argument."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["serializer"] = JSONSerializer
        super().__init__(*args, **kwargs)


def make_scheduler(connection: redis.Redis, interval: int = 5) -> Scheduler:
    return Scheduler(connection=connection, interval=interval, job_class=JsonJob)


REAPER_JOB_ID = "sync-reaper"


def schedule_recurring_jobs(scheduler: Scheduler) -> None:
    """(Re)register the service's own recurring jobs, one of each whatever an earlier start
    left: retention (daily) and the sync reaper (every minute). Sync cron triggers are
    registered by ``platform_api.sync.triggers.reconcile``."""
    for job in scheduler.get_jobs():
        if job.id in (RETENTION_JOB_ID, REAPER_JOB_ID):
            scheduler.cancel(job)
    scheduler.schedule(
        scheduled_time=datetime.now(UTC),
        func="platform_api.jobs.sync.reap_runs",
        id=REAPER_JOB_ID,
        interval=60,
        repeat=None,
        queue_name=DEFAULT,
        timeout=300,
        description="sync reaper: fail runs whose worker died, queue lost runs again",
    )
    scheduler.cron(
        RETENTION_CRON,
        func="platform_api.jobs.retention.prune_job",
        id=RETENTION_JOB_ID,
        queue_name=DEFAULT,
        timeout=3600,
        use_local_timezone=False,  # cron strings are UTC
        description="retention: delete rows past their keep period",
    )
