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
