"""The dotted path of every queue task function (``platform_api.tasks``), as RQ stores it.

RQ keeps a job's function as this string in Redis (queued jobs, and rq-scheduler's recurring
and cron entries) and imports it when a worker runs the job. The code that enqueues or
schedules a task sits below ``tasks`` and names it here, by path, never by import.

Renaming a task function or its module strands the jobs Redis already holds: keep the old
path importable for a release (``platform_api/jobs/`` is such an alias) and let the scheduler
re-register its entries (``tasks.recurring.schedule_recurring_jobs``, ``sync.triggers.reconcile``).
"""

from __future__ import annotations

# Queue ``webhooks``: one attempt at each due delivery.
DELIVER_WEBHOOKS = "platform_api.tasks.webhooks.deliver"
# Queue ``sync``: execute a sync run; a cron trigger's tick.
EXECUTE_SYNC_RUN = "platform_api.tasks.sync.execute"
FIRE_CRON_TRIGGER = "platform_api.tasks.sync.fire_trigger"
# Queue ``default``, on rq-scheduler's clock: the sync reaper (every minute), retention (daily).
REAP_SYNC_RUNS = "platform_api.tasks.sync.reap_runs"
PRUNE_RETENTION = "platform_api.tasks.retention.prune_job"

ALL_TASK_PATHS = (
    DELIVER_WEBHOOKS,
    EXECUTE_SYNC_RUN,
    FIRE_CRON_TRIGGER,
    REAP_SYNC_RUNS,
    PRUNE_RETENTION,
)

# The paths of the same functions before the move to ``platform_api.tasks``, which jobs queued
# or scheduled by the previous release still carry (``platform_api/jobs/`` keeps them working).
LEGACY_TASK_PATHS = {
    "platform_api.jobs.webhooks.deliver": DELIVER_WEBHOOKS,
    "platform_api.jobs.sync.execute": EXECUTE_SYNC_RUN,
    "platform_api.jobs.sync.fire_trigger": FIRE_CRON_TRIGGER,
    "platform_api.jobs.sync.reap_runs": REAP_SYNC_RUNS,
    "platform_api.jobs.retention.prune_job": PRUNE_RETENTION,
}
