"""The inference benchmark states what the machine allows at best for each target."""

from __future__ import annotations

import os
from typing import Any

import pytest

from benchmarks.bench_inference import bound_lines


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def _run(
    by_setup: dict[str, dict[str, float]] | dict[str, dict[int, float]], ceiling: float
) -> dict[str, Any]:
    # Batch sizes arrive as strings when the run's JSON is read back.
    return {
        "args": {"clients": 32},
        "raw_ceiling": {"messages_per_s": ceiling, "by_setup_and_batch_size": by_setup},
    }


@pytest.mark.usefixtures("two_cores")
def test_the_bounds_follow_from_the_cheapest_model_run_and_the_floor() -> None:
    out = _run(
        {
            "1 thread": {"1": 200.0, "64": 500.0},  # 2 ms per message at batch 64
            "2 threads": {"1": 250.0, "100": 800.0},  # 2.5 ms per message (two cores)
        },
        ceiling=800.0,
    )
    throughput, p99, lone = bound_lines(out, floor_ms=2.0)
    # 2 cores / (2 ms model + 2 ms floor) = 500 req/s = 0.62x the ceiling of 800.
    assert "at most 500 single requests a second (0.62x the ceiling)" in throughput
    assert "(1 thread, batch 64)" in throughput
    assert "560 req/s" in throughput  # 0.7 x 800
    # 32 clients / 500 req/s = 64 ms mean latency at the very best.
    assert "at least 64.0 ms" in p99
    # The quickest lone message: 2 threads at batch 1, 1000 / 250 = 4 ms.
    assert "takes 4.0 ms for one message (2 threads, batch 1)" in lone


@pytest.mark.usefixtures("two_cores")
def test_a_faster_machine_moves_every_bound() -> None:
    out = _run({"1 thread": {1: 1000.0, 32: 2000.0}}, ceiling=2000.0)
    throughput, p99, lone = bound_lines(out, floor_ms=0.5)
    # 2 cores / (0.5 + 0.5 ms) = 2000 req/s, the whole ceiling.
    assert "at most 2000 single requests a second (1.00x the ceiling)" in throughput
    assert "at least 16.0 ms" in p99
    assert "takes 1.0 ms for one message" in lone
