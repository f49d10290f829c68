"""Legacy RQ paths ``platform_api.jobs.sync.{execute,fire_trigger,reap_runs}``: see
``platform_api/jobs/__init__.py`` for why they are kept and when they go."""

from platform_api.tasks.sync import execute, fire_trigger, reap_runs

__all__ = ["execute", "fire_trigger", "reap_runs"]
