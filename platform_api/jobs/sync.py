"""The RQ job that executes a sync run (queue ``sync``)."""

from __future__ import annotations

import asyncio

from core.settings import get_settings
from platform_api.services.api_log_writer import flush_api_log
from platform_api.sync.runner import execute_run


def execute(run_id: str) -> str | None:
    """Execute the run; returns its final status."""
    settings = get_settings()
    try:
        return asyncio.run(execute_run(settings, run_id))
    finally:
        # A work horse exits without running exit handlers: write its API-log rows now.
        flush_api_log(settings)
