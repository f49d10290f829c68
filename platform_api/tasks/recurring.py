"""What rq-scheduler runs on the service's own clock: the sync reaper and retention.

Sync cron triggers are the customers' schedules: ``platform_api.sync.triggers.reconcile``
registers those.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rq_scheduler import Scheduler

from platform_api.queueing.queues import DEFAULT
from platform_api.queueing.task_paths import PRUNE_RETENTION, REAP_SYNC_RUNS
from platform_api.tasks.retention import CRON as RETENTION_CRON
from platform_api.tasks.retention import JOB_ID as RETENTION_JOB_ID

REAPER_JOB_ID = "sync-reaper"


def schedule_recurring_jobs(scheduler: Scheduler) -> None:
    """(Re)register the service's own recurring jobs, one of each whatever an earlier start
    left: retention (daily) and the sync reaper (every minute). Cancelling by id and
    registering again also moves an entry an earlier release stored to today's task path."""
    for job in scheduler.get_jobs():
        if job.id in (RETENTION_JOB_ID, REAPER_JOB_ID):
            scheduler.cancel(job)
    scheduler.schedule(
        scheduled_time=datetime.now(UTC),
        func=REAP_SYNC_RUNS,
        id=REAPER_JOB_ID,
        interval=60,
        repeat=None,
        queue_name=DEFAULT,
        timeout=300,
        description="sync reaper: fail runs whose worker died, queue lost runs again",
    )
    scheduler.cron(
        RETENTION_CRON,
        func=PRUNE_RETENTION,
        id=RETENTION_JOB_ID,
        queue_name=DEFAULT,
        timeout=3600,
        use_local_timezone=False,  # cron strings are UTC
        description="retention: delete rows past their keep period",
    )
