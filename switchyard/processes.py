"""The processes `switchyard run` starts beside Ray, as argument lists.

Features that need a long-running process of their own add it to ``service_processes``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from core.settings import Settings
from platform_api.queueing.queues import QUEUE_CLASSES
from switchyard.http_protocol import UVICORN_HTTP


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: list[str]
    listens_on: str | None = None
    env: dict[str, str] = field(default_factory=dict)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "switchyard.cli", *args]


def workers_per_class(settings: Settings) -> dict[str, int]:
    """How many RQ workers `switchyard run` starts for each queue class (0: served elsewhere,
    by `switchyard worker --queues <class>` on another machine)."""
    counts = {
        "webhooks": settings.workers_webhooks,
        "sync": settings.workers_sync,
        "housekeeping": settings.workers_housekeeping,
    }
    # In the classes' own order (the run summary and run.json list them so).
    return {queue_class: counts[queue_class] for queue_class in QUEUE_CLASSES}


def worker_processes(settings: Settings) -> list[ProcessSpec]:
    """The worker pools: ``worker-<class>-<n>``, each serving its class's queues only, so a
    long sync run never holds up webhook delivery or housekeeping."""
    return [
        ProcessSpec(f"worker-{queue_class}-{n}", _cli("worker", "--queues", queue_class))
        for queue_class, count in workers_per_class(settings).items()
        for n in range(1, count + 1)
    ]


def served_elsewhere(queue_class: str) -> str:
    """What the run summary and `status` say of a class this machine starts no worker for."""
    setting = f"SWITCHYARD_WORKERS_{queue_class.upper()}"
    return f"no worker here ({setting}=0): `switchyard worker --queues {queue_class}` elsewhere"


SANDBOX_NOT_STARTED = "not started: SWITCHYARD_MODE=production (a development demo upstream)"


def sandbox_not_started(settings: Settings) -> str | None:
    """What the run summary says of the sandbox when it is left out; None: it is started."""
    return SANDBOX_NOT_STARTED if settings.mode == "production" else None


def service_processes(settings: Settings) -> list[ProcessSpec]:
    """Everything besides Ray: the HTTP front, the RQ worker pools, the rq-scheduler, the
    webhook dispatcher (outbox events to delivery jobs) and, in development mode, the sandbox
    upstream (the demo store + CRM the `sandbox` integrations connect to; production mode
    refuses calls to it anyway)."""
    front = [
        sys.executable, "-m", "uvicorn", "switchyard.app:from_environment", "--factory",
        "--host", settings.host, "--port", str(settings.port),
        "--workers", str(settings.http_workers), "--no-access-log", "--log-level", "warning",
        # Requests the HTTP parser refuses get the JSON error shape too, not uvicorn's text.
        "--http", UVICORN_HTTP,
    ]  # fmt: skip
    processes = [
        ProcessSpec("api", front, listens_on=f"{settings.base_url}/v1"),
        *worker_processes(settings),
        ProcessSpec("scheduler", _cli("scheduler")),
        ProcessSpec("dispatcher", _cli("dispatcher")),
    ]
    if sandbox_not_started(settings) is None:
        sandbox = ProcessSpec(
            "sandbox",
            [sys.executable, "-m", "sandbox"],
            listens_on=f"http://{settings.sandbox_host}:{settings.sandbox_port}",
        )
        processes.append(sandbox)
    return processes
