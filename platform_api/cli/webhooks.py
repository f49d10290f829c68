"""`switchyard dispatcher`: the webhook outbox dispatcher (one process beside the workers)."""

from __future__ import annotations

import signal
import threading

import typer

from core.settings import get_settings


def register(app: typer.Typer) -> None:
    app.command("dispatcher")(dispatcher)


def dispatcher() -> None:
    """Turn outbox events into webhook delivery jobs and re-enqueue deliveries Redis lost."""
    from core.log_config import configure_logging
    from platform_api.queueing.queues import get_redis
    from platform_api.webhooks.dispatcher import run

    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    run(settings, get_redis(settings), stop)
