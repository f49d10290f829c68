"""The load test's traffic mix runs clean against a live service (in-process model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXPECTED_REQUESTS = {
    "classify",
    "classify+history",
    "batch",
    "unified (skip_api_call)",
    "accounts",
    "installed integrations",
    "account",
}


def test_headless_run_exercises_every_request_without_failures(
    live_server: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "locust"), "-f", "benchmarks/locustfile.py",
         "--host", live_server, "--headless", "-u", "4", "-r", "4", "-t", "8s",
         "--only-summary", "--json-file", str(tmp_path / "stats")],
        cwd=REPO,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    stats = {entry["name"]: entry for entry in json.loads((tmp_path / "stats.json").read_text())}
    assert set(stats) >= EXPECTED_REQUESTS, sorted(stats)
    for name in EXPECTED_REQUESTS:
        assert stats[name]["num_requests"] > 0, name
        assert stats[name]["num_failures"] == 0, (name, stats[name])
