"""`switchyard run` as a user starts it, for tests: its own var/ and ports, a log, SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from tests.conftest import free_port

START_TIMEOUT = 180


def service_env(var_dir: Path, port: int) -> dict[str, str]:
    """This process's environment, less anything that points at other servers, plus a
    private var/ and free ports."""
    inherited = {"DATABASE_URL", "REDIS_URL", "RAY_ADDRESS"}
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in inherited and not key.startswith("SWITCHYARD_")
    }
    env.update(
        SWITCHYARD_VAR_DIR=str(var_dir),
        SWITCHYARD_PORT=str(port),
        SWITCHYARD_DASHBOARD_PORT=str(free_port()),
        SWITCHYARD_SANDBOX_PORT=str(free_port()),
        SWITCHYARD_LOG_JSON="false",
    )
    return env


def start_service(env: dict[str, str], log: Path) -> subprocess.Popen:
    # A new session, like a terminal's foreground job, so Ctrl-C reaches the whole group.
    return subprocess.Popen(
        [sys.executable, "-m", "switchyard.cli", "run"],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_healthy(proc: subprocess.Popen, port: int, log: Path, *, path: str = "/healthz") -> None:
    """Until ``path`` answers 200 and the start-up summary is printed."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"switchyard run exited early:\n{log.read_text()[-4000:]}"
        try:
            answered = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5).status_code == 200
            if answered and "Press Ctrl-C" in log.read_text():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"no {path} within {START_TIMEOUT}s:\n{log.read_text()[-4000:]}")


def sigterm(proc: subprocess.Popen) -> tuple[list[psutil.Process], list[str]]:
    """SIGTERM to the main process only, as a process manager sends it; returns the
    descendants and their command lines from just before."""
    descendants = psutil.Process(proc.pid).children(recursive=True)
    commands = []
    for process in descendants:
        with contextlib.suppress(psutil.Error):
            commands.append(" ".join(process.cmdline()))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=90) == 0
    return descendants, commands


def still_running(processes: list[psutil.Process]) -> list[str]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{process.pid} {' '.join(process.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            continue
    return alive


def kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
