"""Helpers every benchmark script shares: ports, the machine line, percentiles, processes."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def machine() -> str:
    """CPU model, CPU count, Python version and the 1-minute load at the time of the run."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg()[0]
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load {load:.2f}"


def percentile(values: list[float], q: float) -> float:
    """The value at quantile ``q`` (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def wait_http(url: str, timeout_s: float = 180.0, proc: subprocess.Popen | None = None) -> None:
    """Wait until ``url`` answers with anything but a 5xx."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code < 500:
                return
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not come up")


@contextlib.contextmanager
def process(argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """A child process for the duration of the block, stopped (then killed) after it."""
    proc = subprocess.Popen(argv, env=env, cwd=REPO)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def create_token_and_sandbox_account(name: str, base_url: str | None = None) -> tuple[str, str]:
    """Migrate the configured database, then create an API token and a ``sandbox`` account
    (its upstream at ``base_url`` when given); returns (token secret, account id)."""
    from core.settings import get_settings
    from platform_api.db import migrate, session_scope
    from platform_api.services import accounts
    from platform_api.services.installed_integrations import find_installed, install
    from platform_api.services.tokens import create_token
    from platform_api.tables.integrated_account import IntegratedAccountUpdate

    settings = get_settings()
    migrate(settings)
    with session_scope(settings) as session:
        _, secret = create_token(session, environment="development", name=name)
        installed = find_installed(
            session, environment_id="development", integration_name="sandbox"
        ) or install(session, environment_id="development", integration_name="sandbox")
        session.flush()
        account = accounts.create_account(
            session, installed=installed, tenant_id=name, credentials={"api_key": "sk_sandbox_demo"}
        )
        session.flush()
        if base_url is not None:
            accounts.update_account(
                session,
                account=account,
                update=IntegratedAccountUpdate(override={"base_url": base_url}),
            )
        return secret, account.id
