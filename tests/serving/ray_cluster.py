"""A separate Ray cluster for tests: a head and a worker node started with ``ray start``.

Each node is started in a session of its own, so stopping the cluster kills exactly the
processes it started (``ray stop`` would stop every Ray process on the machine, the test
session's own included).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import free_port

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


@dataclass
class RayCluster:
    """Addresses of a running test cluster and the sessions its processes belong to."""

    gcs_address: str
    dashboard_url: str
    temp_dir: Path
    auth_env: dict[str, str]  # what a process needs to join: token authentication, its token
    sessions: list[int] = field(default_factory=list)

    def cli(self, *args: str, timeout: float = 120) -> str:
        """Run a ``ray``/``serve`` command from the repository root; returns its stdout."""
        done = subprocess.run(
            [str(BIN / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
            env={**os.environ, **self.auth_env, "RAY_ADDRESS": self.gcs_address},
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def list_json(self, kind: str) -> list[dict]:
        """``ray list <kind>`` as records (nodes, actors, ...)."""
        return json.loads(
            self.cli("ray", "list", kind, "--address", self.gcs_address, "--format", "json")
        )


def _session_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces) start at ") ": state ppid pgrp sid.
    return int(stat.rsplit(")", 1)[1].split()[3])


def _processes_in(sessions: set[int]) -> list[int]:
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    return [pid for pid in pids if pid != os.getpid() and _session_of(pid) in sessions]


def _kill_sessions(sessions: list[int], grace_s: float = 10) -> None:
    wanted = set(sessions)
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5)):
        for pid in _processes_in(wanted):
            with suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while _processes_in(wanted) and time.monotonic() < deadline:
            time.sleep(0.2)


def _ray_start(env: dict[str, str], *args: str) -> int:
    """Start a node; returns the session id its daemons run in."""
    process = subprocess.Popen(
        [str(BIN / "ray"), "start", "--disable-usage-stats", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env=env,
    )
    output, _ = process.communicate(timeout=180)
    if process.returncode != 0:
        _kill_sessions([process.pid])
        raise RuntimeError(f"ray start {' '.join(args)} failed:\n{output[-3000:]}")
    return process.pid


@contextmanager
def ray_cluster(worker_cpus: int = 2) -> Iterator[RayCluster]:
    """A head node that runs no tasks (as on a production cluster) and one worker node."""
    temp_dir = Path(tempfile.mkdtemp(prefix="raytest-", dir="/tmp"))  # short: socket paths
    gcs_port, dashboard_port = free_port(), free_port()
    # Token authentication, as Ray 2.60 sets up clusters, with the cluster's own token: left
    # to guess, `ray start` turns it on or off by whether ~/.ray/auth_token happens to exist,
    # and a worker node guessing differently from its head cannot join.
    token = temp_dir / "auth_token"
    token.write_text(secrets.token_hex(32))
    cluster = RayCluster(
        gcs_address=f"127.0.0.1:{gcs_port}",
        dashboard_url=f"http://127.0.0.1:{dashboard_port}",
        temp_dir=temp_dir,
        auth_env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)},
    )
    try:
        cluster.sessions.append(
            _ray_start(
                {**os.environ, **cluster.auth_env},
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={gcs_port}",
                "--num-cpus=0",
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={dashboard_port}",
                f"--dashboard-agent-listen-port={free_port()}",
                f"--ray-client-server-port={free_port()}",
                f"--temp-dir={temp_dir}",
            )
        )
        cluster.sessions.append(
            _ray_start(
                {**os.environ, **cluster.auth_env},
                f"--address={cluster.gcs_address}",
                "--node-ip-address=127.0.0.1",
                f"--num-cpus={worker_cpus}",
                f"--dashboard-agent-listen-port={free_port()}",
            )
        )
        yield cluster
    finally:
        _kill_sessions(cluster.sessions)
        subprocess.run(["rm", "-rf", str(temp_dir)], check=False)
