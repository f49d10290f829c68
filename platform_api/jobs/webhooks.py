"""Legacy RQ path ``platform_api.jobs.webhooks.deliver``: see ``platform_api/jobs/__init__.py``
for why it is kept and when it goes."""

from platform_api.tasks.webhooks import deliver

__all__ = ["deliver"]
