"""The processes `switchyard run` starts beside Ray, as argument lists.

Features that need a long-running process of their own add it to ``service_processes``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from core.settings import Settings
from switchyard.http_protocol import UVICORN_HTTP


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: list[str]
    listens_on: str | None = None
    env: dict[str, str] = field(default_factory=dict)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "switchyard.cli", *args]


def service_processes(settings: Settings) -> list[ProcessSpec]:
    """Everything besides Ray: the HTTP front, one RQ worker, the rq-scheduler, the webhook
    dispatcher (outbox events to delivery jobs) and the sandbox upstream (the demo store + CRM
    the `sandbox` integrations connect to)."""
    front = [
        sys.executable, "-m", "uvicorn", "switchyard.app:from_environment", "--factory",
        "--host", settings.host, "--port", str(settings.port),
        "--workers", str(settings.http_workers), "--no-access-log", "--log-level", "warning",
        # Requests the HTTP parser refuses get the JSON error shape too, not uvicorn's text.
        "--http", UVICORN_HTTP,
    ]  # fmt: skip
    return [
        ProcessSpec("api", front, listens_on=f"{settings.base_url}/v1"),
        ProcessSpec("worker", _cli("worker")),
        ProcessSpec("scheduler", _cli("scheduler")),
        ProcessSpec("dispatcher", _cli("dispatcher")),
        ProcessSpec(
            "sandbox",
            [sys.executable, "-m", "sandbox"],
            listens_on=f"http://{settings.sandbox_host}:{settings.sandbox_port}",
        ),
    ]
