"""Legacy paths of the queue tasks, kept for one release: importable aliases only.

The queue tasks moved to ``platform_api.tasks`` ("job" now means a customer's sync job). RQ
stores a job's function as a dotted path in Redis, so jobs queued before the upgrade, and the
recurring and cron entries rq-scheduler still holds, name ``platform_api.jobs.<module>.<fn>``
(``platform_api.queueing.task_paths.LEGACY_TASK_PATHS``). These modules re-export those
functions so such jobs still run.

Remove this package in the release after the one that moved the tasks: by then every worker
has drained the old jobs, and the scheduler has re-registered its entries under the new paths
at its first start (``schedule_recurring_jobs`` and ``sync.triggers.reconcile`` cancel by id
and register again). Nothing new imports from here.
"""
