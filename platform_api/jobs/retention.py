"""Legacy RQ path ``platform_api.jobs.retention.prune_job``: see ``platform_api/jobs/__init__.py``
for why it is kept and when it goes."""

from platform_api.tasks.retention import prune_job

__all__ = ["prune_job"]
