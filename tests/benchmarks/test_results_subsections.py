"""A benchmark that measures several setups keeps each setup's latest part of its section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import bench_sync
from benchmarks.common import read_section, replace_subsection

OTHER = "## Webhooks — 2026-11-22 04:42 UTC\n\nwebhooks text\n"
SECTION = (
    "## Sync run throughput — 2026-11-27 10:00 UTC\n\nNotes by hand.\n\n"
    "### SQLite, one run — 2026-11-27 10:00 UTC\n\nold sqlite\n\n"
    "### PostgreSQL, one run — 2026-11-27 09:00 UTC\n\npostgres\n"
)


def test_read_section_finds_the_benchmarks_section_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text(f"# Benchmark results\n\n{SECTION}\n{OTHER}", encoding="utf-8")
    assert read_section("## Sync run throughput", path) == SECTION + "\n"
    assert read_section("## Sync", path) is None  # a heading is matched whole
    assert read_section("## Sync run throughput", tmp_path / "missing.md") is None


def test_a_subsection_is_replaced_in_place_and_the_rest_kept() -> None:
    new = "### SQLite, one run — 2026-11-28 08:00 UTC\n\nnew sqlite\n"
    assert replace_subsection(SECTION, "### SQLite, one run", new) == SECTION.replace(
        "### SQLite, one run — 2026-11-27 10:00 UTC\n\nold sqlite\n", new
    )


def test_the_last_subsection_is_replaced_and_a_new_one_added_at_the_end() -> None:
    new = "### PostgreSQL, one run — 2026-11-28 08:00 UTC\n\nnew\n"
    replaced = replace_subsection(SECTION, "### PostgreSQL, one run", new)
    assert replaced == SECTION.replace("### PostgreSQL, one run — 2026-11-27 09:00 UTC\n\n"
                                       "postgres\n", new)  # fmt: skip
    added = replace_subsection(SECTION, "### PostgreSQL, 4 runs at once", "### PostgreSQL, 4 "
                               "runs at once — x\n\nfour\n")  # fmt: skip
    assert added == SECTION + "\n### PostgreSQL, 4 runs at once — x\n\nfour\n"


def _report(setup: str, records_per_s: int) -> dict[str, Any]:
    return {
        "benchmark": "sync run of wms/returns, 1000 records, 100 per page", "setup": setup,
        "runs_at_once": 1, "workers": 1, "records": 1000, "pages": 10, "run_seconds": 0.5,
        "records_per_s": records_per_s, "records_per_s_each_batch": [records_per_s],
        "ms_per_page": 50.0, "worker_wall_seconds_incl_start": 2.0, "first_page_s": 0.2,
        "steady_ms_per_page": 40.0, "cpu_ms_per_page": {"work horses": 12.5},
        "machine": "AMD EPYC (avx2), 2 CPUs",
    }  # fmt: skip


def test_bench_sync_keeps_one_part_per_setup_and_the_notes_above_them(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text(f"# Benchmark results\n\n{OTHER}", encoding="utf-8")
    bench_sync.write_results(_report("SQLite + embedded Redis", 111), "python -m x", path)
    bench_sync.write_results(_report("PostgreSQL + Redis server", 222), "python -m y", path)
    section = read_section(bench_sync.HEADING, path)
    assert section is not None
    path.write_text(path.read_text().replace(bench_sync.INTRO, "Notes by hand."))
    bench_sync.write_results(_report("SQLite + embedded Redis", 333), "python -m z", path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# Benchmark results\n\n{OTHER}\n{bench_sync.HEADING} — ")
    parts = [line for line in text.splitlines() if line.startswith("### ")]
    assert [p.split(" — ")[0] for p in parts] == [
        "### SQLite + embedded Redis, one run, 1 worker",
        "### PostgreSQL + Redis server, one run, 1 worker",
    ]
    assert "Notes by hand." in text and "**333 records/s**" in text and "**222" in text
    assert "**111" not in text and "`python -m z`" in text
