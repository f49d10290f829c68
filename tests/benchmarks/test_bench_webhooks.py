"""bench_webhooks keeps one section in RESULTS.md with the latest result of each setup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.bench_webhooks import HEADING, write_results

OTHER = "## Sync run throughput — 2026-11-24 09:43 UTC\n\nby hand\n"


def report(setup: str, per_s: float) -> dict[str, Any]:
    return {
        "setup": setup,
        "machine": "AMD EPYC, 2 CPUs",
        "worker": "platform_api.tasks.webhooks",
        "events": 3000,
        "bursts": 3,
        "deliveries_per_s": per_s,
        "deliveries_per_s_each_burst": [per_s, per_s + 1, per_s - 1],
        "idle_samples": 100,
        "idle_p50_ms": 9.5,
        "idle_p99_ms": 20.0,
        "idle_max_ms": 30.0,
        "idle_p50_ms_by_stage": {"wake": 0.2, "fan_out_to_job": 5.0, "job": 4.0},
        "worker_cpu_ms_per_delivery": 0.3,
        "dispatcher_cpu_ms_per_delivery": 0.04,
        "receiver_cpu_ms_per_delivery": 0.06,
        "database_cpu_ms_per_delivery": 0.2,
        "duplicates": 0,
        "lost": 0,
        "unsettled": 0,
        "retried": 0,
    }


def test_each_setup_keeps_its_latest_result_in_the_one_section(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# Benchmark results\n\n{OTHER}", encoding="utf-8")

    write_results(report("SQLite + embedded Redis", 1000.0), "python -m x", results)
    write_results(report("PostgreSQL + Redis server", 2000.0), "python -m x --pg", results)
    write_results(report("SQLite + embedded Redis", 1500.0), "python -m x", results)

    text = results.read_text(encoding="utf-8")
    assert text.startswith(f"# Benchmark results\n\n{OTHER}")
    assert text.count(f"{HEADING} — ") == 1
    assert text.count("### SQLite + embedded Redis — ") == 1
    assert text.count("### PostgreSQL + Redis server — ") == 1
    assert "| 1500.0 deliveries/s" in text and "| 1000.0 deliveries/s" not in text
    assert "| 2000.0 deliveries/s" in text and "`python -m x --pg`" in text


def test_notes_added_by_hand_to_the_section_stay(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    write_results(report("SQLite + embedded Redis", 1000.0), "python -m x", results)
    with results.open("a", encoding="utf-8") as f:
        f.write("\n### Where the time went (by hand)\n\nnotes\n")

    write_results(report("SQLite + embedded Redis", 1100.0), "python -m x", results)

    text = results.read_text(encoding="utf-8")
    assert "### Where the time went (by hand)\n\nnotes\n" in text
    assert "| 1100.0 deliveries/s" in text


def test_more_than_one_worker_is_named_in_the_machine_line(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    two = {**report("PostgreSQL + Redis server", 2500.0), "workers": 2}
    write_results(two, "python -m x --workers 2", results)
    write_results(report("SQLite + embedded Redis", 3000.0), "python -m x", results)

    text = results.read_text(encoding="utf-8")
    assert "2 processes (`SWITCHYARD_WORKERS_WEBHOOKS=2`)" in text
    assert text.count("SWITCHYARD_WORKERS_WEBHOOKS") == 1  # one worker: nothing added
    assert "`python -m x --workers 2`" in text
