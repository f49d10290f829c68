"""Sync jobs: which unified resources to copy for an account, the runs that copy them (queue
tasks on the ``sync`` queue: ``platform_api.tasks.sync``), and the cache of returns those runs
keep. A sync job is the customer's; it is not an RQ job.

- ``jobs``: creating, listing and deleting jobs and runs (validation of resource graphs).
- ``runner``: executing a run through the same unified engine as live calls.
- ``triggers``: cron triggers, registered with rq-scheduler.
- ``reaper``: runs whose worker died, or whose queue task was lost.
- ``cache``: the returns cache and its reads.
"""
