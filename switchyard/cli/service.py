"""`switchyard run | status | worker | scheduler`: the service's processes."""

from __future__ import annotations

import json
import os

import httpx
import typer
from rich.console import Console
from rich.table import Table

from core.settings import Settings, get_settings


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("status")(status)
    app.command("worker")(worker)
    app.command("scheduler")(scheduler)


def checked_settings() -> Settings:
    """The settings of a process that reads credentials; a one-line exit when production mode
    lacks what it requires (before anything starts: no crash loop of restarted parts)."""
    from platform_api.crypto import MissingEncryptionKey, require_key_in_production

    settings = get_settings()
    try:
        require_key_in_production(settings)
    except MissingEncryptionKey as exc:
        typer.echo(f"switchyard: {exc}", err=True)
        raise typer.Exit(1) from None
    return settings


def run() -> None:
    """Start the whole service in the foreground (Ctrl-C stops every part)."""
    from core.log_config import configure_logging
    from switchyard.supervisor import Supervisor

    settings = checked_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    raise typer.Exit(Supervisor(settings).run())


def status() -> None:
    """Which parts of a running service are up."""
    from switchyard.processes import served_elsewhere

    settings = get_settings()
    state_file = settings.var_dir / "run.json"
    table = Table("part", "state", "detail")
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    for name, pid in state.get("processes", {}).items():
        table.add_row(name, "up" if _alive(pid) else "down", f"pid {pid}")
    for queue_class, count in state.get("workers", {}).items():
        if count == 0:
            table.add_row(f"worker-{queue_class}", "elsewhere", served_elsewhere(queue_class))
    up = True
    # The running service's own address (it may differ from this shell's settings).
    base_url = state.get("base_url", f"{settings.base_url}/v1").removesuffix("/v1")
    try:
        # In production /readyz details its checks only to a token holder.
        token = settings.metrics_token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        answer = httpx.get(f"{base_url}/readyz", headers=headers, timeout=10.0)
        readiness = answer.json()
        if "checks" not in readiness:
            readiness["checks"] = {"ready": readiness.get("status") == "ready"}
        causes = readiness.get("causes", {})
        table.add_row("http front", "up", f"{base_url}/v1")
        for check, ok in readiness.get("checks", {}).items():
            table.add_row(check, "up" if ok else "down", causes.get(check, ""))
            up = up and ok
    except httpx.HTTPError as exc:
        table.add_row("http front", "down", f"{base_url}: {type(exc).__name__}")
        up = False
    if dashboard := state.get("dashboard_url"):
        try:
            httpx.get(dashboard, timeout=3.0)
            table.add_row("ray dashboard", "up", dashboard)
        except httpx.HTTPError:
            table.add_row("ray dashboard", "down", dashboard)
            up = False
    Console().print(table)
    raise typer.Exit(0 if up else 1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def worker(
    queues: list[str] = typer.Option(
        None,
        "--queues",
        "--queue",
        "-q",
        help="Queue classes (webhooks, sync, housekeeping) or queues (webhooks, default, sync) "
        "to serve, comma-separated or repeated; served in priority order (default: all).",
    ),
    burst: bool = typer.Option(False, help="Exit once the queues are empty."),
) -> None:
    """Run one RQ worker on the service's queues."""
    from rq.serializers import JSONSerializer

    from core.log_config import configure_logging
    from platform_api.queueing.queues import UnknownQueue, get_queue, get_redis, resolve_queues
    from platform_api.webhooks.worker import worker_class

    try:
        names = resolve_queues(queues or [])
    except UnknownQueue as exc:
        typer.echo(f"switchyard worker: {exc}", err=True)
        raise typer.Exit(2) from None
    settings = checked_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    _preload_tasks()
    connection = get_redis(settings)
    # Webhooks-only workers send in-process (no fork per job); any other mix forks per job.
    worker = worker_class(names)(
        [get_queue(n, connection) for n in names], connection=connection, serializer=JSONSerializer
    )
    worker.work(burst=burst, with_scheduler=True)


def _preload_tasks() -> None:
    """Import every queue task module (and run its optional ``preload()``) in the worker
    itself, so each forked work horse starts with them loaded instead of importing them per
    job."""
    import gc
    import importlib
    import pkgutil

    import platform_api.tasks as tasks

    for module_info in pkgutil.iter_modules(tasks.__path__):
        module = importlib.import_module(f"{tasks.__name__}.{module_info.name}")
        if callable(warm := getattr(module, "preload", None)):
            warm()
    # Everything loaded so far lives as long as the worker: out of the garbage collector's
    # sight, a work horse's collections stay small and don't copy the parent's pages.
    gc.freeze()


def scheduler(interval: int = typer.Option(5, help="Seconds between schedule checks.")) -> None:
    """Run rq-scheduler, which enqueues cron and delayed jobs (UTC), the daily retention
    job among them."""
    from core.log_config import configure_logging
    from platform_api.queueing.queues import get_redis
    from platform_api.queueing.scheduler import make_scheduler
    from platform_api.sync.triggers import reconcile
    from platform_api.tasks.recurring import schedule_recurring_jobs

    settings = checked_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    scheduler = make_scheduler(get_redis(settings), interval)
    schedule_recurring_jobs(scheduler)
    reconcile(settings, scheduler)  # sync cron triggers, from the database
    scheduler.run()
