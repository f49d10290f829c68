"""Two `switchyard run` never share one data directory; the lock goes with the process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from switchyard.supervisor import DataDirInUse, hold_data_lock


def test_a_second_run_on_the_same_data_directory_is_refused(tmp_path: Path) -> None:
    held = hold_data_lock(tmp_path)
    try:
        env = {**os.environ, "SWITCHYARD_VAR_DIR": str(tmp_path)}
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
        second = subprocess.run(
            [sys.executable, "-m", "switchyard.cli", "run"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 1
        said = " ".join((second.stdout + second.stderr).split())  # the console wraps lines
        assert "in use by another" in said and f"pid {os.getpid()}" in said
    finally:
        held.close()


def test_the_lock_is_free_again_once_its_holder_is_gone(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path;"
         "from switchyard.supervisor import hold_data_lock;"
         f"h = hold_data_lock(Path({str(tmp_path)!r})); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(DataDirInUse):
            hold_data_lock(tmp_path)
    finally:
        holder.kill()  # even SIGKILL releases it
        holder.wait()
    hold_data_lock(tmp_path).close()
