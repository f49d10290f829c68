"""`switchyard run` starts every part, serves /healthz, and Ctrl-C or SIGTERM (what docker,
systemd and Kubernetes send, to the main process only) leaves nothing behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import free_port
from tests.service_run import (
    kill_group,
    service_env,
    sigterm,
    start_service,
    still_running,
    wait_healthy,
)

pytestmark = pytest.mark.slow


def _ctrl_c(proc: subprocess.Popen) -> list[psutil.Process]:
    descendants = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=90)
    return descendants


def _crash_and_see_it_restarted(var_dir: Path, part: str, log: Path) -> None:
    """SIGKILL one part; the supervisor starts it again (a new pid in run.json, alive), and
    leaves every other part as it was."""
    state = var_dir / "run.json"
    old_pids = json.loads(state.read_text())["processes"]
    os.kill(old_pids[part], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new_pids = json.loads(state.read_text())["processes"]
        if new_pids[part] != old_pids[part] and psutil.pid_exists(new_pids[part]):
            assert f"{part} exited with code -9; starting it again" in log.read_text()
            assert {**new_pids, part: old_pids[part]} == old_pids
            return
        time.sleep(0.2)
    raise AssertionError(f"{part} was not started again:\n{log.read_text()[-3000:]}")


def test_run_serves_then_ctrl_c_or_sigterm_stops_every_process_and_restart_reuses_data(
    tmp_path: Path,
) -> None:
    var_dir = tmp_path / "var"
    port = free_port()
    first_log = tmp_path / "first.log"
    proc = start_service(service_env(var_dir, port), first_log)
    try:
        wait_healthy(proc, port, first_log)
        printed = re.search(r"(sy_[A-Za-z0-9_-]{30,})", first_log.read_text())
        assert printed, "the first start prints a development API token"
        token = printed.group(1)
        headers = {"Authorization": f"Bearer {token}"}
        response = httpx.get(f"http://127.0.0.1:{port}/v1/integration", headers=headers)
        assert response.status_code == 200, response.text
        # `status` finds the running service from var/ even without its port in the env.
        status_env = service_env(var_dir, free_port())
        status = subprocess.run(
            [sys.executable, "-m", "switchyard.cli", "status"],
            env=status_env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert status.returncode == 0, status.stdout + status.stderr
        parts = ("api", "worker-webhooks-1", "worker-sync-1", "worker-housekeeping-1",
                 "scheduler", "dispatcher", "database", "redis", "model")  # fmt: skip
        for part in parts:
            assert part in status.stdout
        descendants = _ctrl_c(proc)
    finally:
        kill_group(proc)
    assert len(descendants) >= 3, "front, worker and scheduler (plus Ray) run as children"
    assert still_running(descendants) == []
    assert (var_dir / "switchyard.db").exists()

    second_log = tmp_path / "second.log"
    # Two webhook workers, and sync runs left to workers on other machines.
    pools = {"SWITCHYARD_WORKERS_WEBHOOKS": "2", "SWITCHYARD_WORKERS_SYNC": "0"}
    proc = start_service({**service_env(var_dir, port), **pools}, second_log)
    try:
        wait_healthy(proc, port, second_log)
        assert token not in second_log.read_text()
        assert "Development API token" not in second_log.read_text()
        response = httpx.get(f"http://127.0.0.1:{port}/v1/integration", headers=headers)
        assert response.status_code == 200, "the first start's token still works"
        workers = {n for n in json.loads((var_dir / "run.json").read_text())["processes"]
                   if n.startswith("worker")}  # fmt: skip
        assert workers == {"worker-webhooks-1", "worker-webhooks-2", "worker-housekeeping-1"}
        assert "(SWITCHYARD_WORKERS_SYNC=0)" in second_log.read_text()  # the summary says so
        _crash_and_see_it_restarted(var_dir, "dispatcher", second_log)
        _crash_and_see_it_restarted(var_dir, "worker-webhooks-2", second_log)
        descendants, commands = sigterm(proc)
    finally:
        kill_group(proc)
    # The embedded redis-server daemonizes: it is a descendant (and gets stopped) only because
    # `switchyard run` adopts orphaned processes.
    assert any("redis-server" in command for command in commands), commands
    assert still_running(descendants) == []
    assert not (var_dir / "run.json").exists()


def test_a_model_that_fails_to_deploy_is_told_in_one_line_and_readyz_keeps_the_cause(
    tmp_path: Path,
) -> None:
    """The platform half still starts; the console says why the model did not, once, with
    what to do, and so do /readyz and `switchyard status`; SIGTERM to the whole process group
    still stops everything."""
    config = Path(__file__).resolve().parents[2] / "serving" / "serve_config.yaml"
    broken = tmp_path / "serve_config.yaml"
    broken.write_text(
        config.read_text().replace("serving.serve_app:build_app", "serving.not_shipped:build_app")
    )
    var_dir = tmp_path / "var"
    port = free_port()
    log = tmp_path / "run.log"
    env = {**service_env(var_dir, port), "SWITCHYARD_SERVE_CONFIG_PATH": str(broken)}
    proc = start_service(env, log)
    try:
        wait_healthy(proc, port, log)
        for _ in range(3):
            readiness = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30)
        status = subprocess.run(
            [sys.executable, "-m", "switchyard.cli", "status"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        # SIGTERM to every process at once, as systemd (KillMode=control-group) stops a
        # service: Ray's own processes go first, and stopping must not wait on them.
        descendants = psutil.Process(proc.pid).children(recursive=True)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=90)
    finally:
        kill_group(proc)
    printed = log.read_text()
    cause = "No module named 'serving.not_shipped'"
    told = [line for line in printed.splitlines() if line.startswith("model deployment failed")]
    assert told == [f"model deployment failed: {cause}"], printed[-4000:]
    # The front says it once too, however often /readyz is asked.
    assert printed.count(f"classifier not ready: model deployment failed: {cause}") == 1
    assert "pip install -e ." in printed
    assert "Traceback" not in printed, printed[-4000:]
    assert cause in (var_dir / "logs" / "model-deploy.log").read_text()
    assert readiness.status_code == 503
    assert readiness.json()["checks"]["model"] is False
    assert cause in readiness.json()["causes"]["model"]
    assert status.returncode == 1 and "serving.not_shipped" in status.stdout, status.stdout
    assert still_running(descendants) == []
