"""A benchmark's run replaces its own section of RESULTS.md and leaves every other byte alone."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from benchmarks.common import RESULTS, cpu, write_section

HEADER = "# Benchmark results\n\nThe latest result of each benchmark.\n\n| a | b |\n|---|---|\n"
INFERENCE = "## Inference — 2026-11-27 12:09 UTC\n\nMachine: old.\n\n| x |\n|---|\n| 1 |\n"
SHADOW = "## Inference shadow — 2026-11-24 21:09 UTC\n\nShadow, by hand.\n"
SOAK = "## Soak and autoscaling — 2026-11-25 00:19 UTC\n\nReading it: by hand.\n"
UNIFIED = "## Unified API engine overhead (bench_unified.py)\n\n2026-11-24 21:35 UTC, old.\n"
NEW = "\n## Inference — 2026-11-28 08:00 UTC\n\nMachine: new.\nCommand: `python -m x`\n"
NEW_BODY = NEW.strip("\n") + "\n"

# Every script that writes a section, by module: the heading it finds its section by.
SCRIPTS = [
    "bench_body_scan",
    "bench_inference",
    "bench_int8_kernels",
    "bench_model_versions",
    "bench_quantization",
    "bench_shadow",
    "bench_sync",
    "bench_unified",
    "bench_webhooks",
    "soak",
]


def results(tmp_path: Path, *sections: str) -> Path:
    path = tmp_path / "RESULTS.md"
    path.write_text("\n".join([HEADER, *sections]), encoding="utf-8")
    return path


def test_replaces_its_own_section_and_leaves_the_others_byte_identical(tmp_path: Path) -> None:
    path = results(tmp_path, INFERENCE, SHADOW, SOAK)
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "\n".join([HEADER, NEW_BODY, SHADOW, SOAK])


def test_a_heading_that_extends_the_prefix_is_another_benchmarks(tmp_path: Path) -> None:
    path = results(tmp_path, SHADOW, SOAK)
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "\n".join([HEADER, SHADOW, SOAK, NEW_BODY])


def test_replaces_the_last_section(tmp_path: Path) -> None:
    path = results(tmp_path, SHADOW, SOAK, INFERENCE)
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "\n".join([HEADER, SHADOW, SOAK, NEW_BODY])


def test_appends_when_the_benchmark_has_no_section(tmp_path: Path) -> None:
    path = results(tmp_path, SOAK)
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "\n".join([HEADER, SOAK, NEW_BODY])


def test_creates_the_file_when_there_is_none(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "# Benchmark results\n\n" + NEW_BODY


def test_runs_after_runs_keep_one_section(tmp_path: Path) -> None:
    path = results(tmp_path, INFERENCE, SOAK)
    for minute in range(3):
        write_section("## Inference", f"## Inference — 2026-11-28 08:0{minute} UTC\n\nrun\n", path)
    text = path.read_text(encoding="utf-8")
    assert text == "\n".join([HEADER, "## Inference — 2026-11-28 08:02 UTC\n\nrun\n", SOAK])


def test_older_sections_of_the_same_benchmark_go(tmp_path: Path) -> None:
    older = INFERENCE.replace("12:09", "02:01")
    path = results(tmp_path, older, SOAK, INFERENCE, SHADOW)
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "\n".join([HEADER, NEW_BODY, SOAK, SHADOW])


def test_an_older_last_section_goes_without_leaving_blank_lines(tmp_path: Path) -> None:
    older = INFERENCE.replace("12:09", "02:01")
    path = results(tmp_path, older, SOAK, INFERENCE)
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "\n".join([HEADER, NEW_BODY, SOAK.rstrip("\n")]) + (
        "\n"
    )


def test_a_heading_without_a_date_matches_whole(tmp_path: Path) -> None:
    heading = "## Unified API engine overhead (bench_unified.py)"
    path = results(tmp_path, UNIFIED, SOAK)
    write_section(heading, f"{heading}\n\n2026-11-28 08:00 UTC, new.\n", path)
    assert path.read_text(encoding="utf-8") == "\n".join(
        [HEADER, f"{heading}\n\n2026-11-28 08:00 UTC, new.\n", SOAK]
    )


def test_a_heading_line_inside_a_code_block_does_not_end_a_section(tmp_path: Path) -> None:
    fenced = "## Soak and autoscaling — 2026-11-25 00:19 UTC\n\n```\n## Inference — not one\n```\n"
    path = results(tmp_path, fenced, INFERENCE)
    write_section("## Inference", NEW, path)
    assert path.read_text(encoding="utf-8") == "\n".join([HEADER, fenced, NEW_BODY])


def test_other_line_endings_and_characters_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    before = "# Benchmark results\r\n\r\n## Soak and autoscaling — x\r\n\r\nΔ ≥ 200 — ok\r\n"
    path.write_bytes(before.encode("utf-8"))
    write_section("## Inference", NEW, path)
    assert path.read_bytes() == before.encode("utf-8") + b"\n" + NEW_BODY.encode("utf-8")


def test_a_section_that_does_not_start_with_its_heading_is_refused(tmp_path: Path) -> None:
    path = results(tmp_path, INFERENCE, SOAK)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="does not start with"):
        write_section("## Inference", "## Inference shadow — 2026-11-28\n\nx\n", path)
    with pytest.raises(ValueError, match="does not start with"):
        write_section("## Inference", "Machine: new.\n", path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_scripts_heading_finds_its_one_section_in_results_md(
    script: str, tmp_path: Path
) -> None:
    """The first run after the scripts stopped appending replaces the section there now."""
    heading = importlib.import_module(f"benchmarks.{script}").HEADING
    copy = tmp_path / "RESULTS.md"
    copy.write_bytes(RESULTS.read_bytes())
    before = copy.read_text(encoding="utf-8")
    write_section(heading, f"{heading} — 2026-11-28 08:00 UTC\n\nnew\n", copy)
    after = copy.read_text(encoding="utf-8")
    headings = [line for line in before.splitlines() if line.startswith("## ")]
    mine = [line for line in headings if line == heading or line.startswith(heading + " — ")]
    assert len(mine) == 1, mine
    assert [line for line in after.splitlines() if line.startswith("## ")] == [
        f"{heading} — 2026-11-28 08:00 UTC" if line == mine[0] else line for line in headings
    ]
    # Only the section's own text changed: what comes before and after it is as it was.
    start = before.index(mine[0] + "\n")
    following = [line for line in headings[headings.index(mine[0]) + 1 :]]
    end = before.index("\n" + following[0] + "\n") + 1 if following else len(before)
    assert after.startswith(before[:start])
    assert after.endswith(before[end:])


def test_the_machine_line_names_the_cpu_and_its_instruction_sets() -> None:
    cpuinfo = (
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\n"
        "flags\t\t: fpu sse2 avx2 avx512f avx512_vnni amx_tile amx_int8 avx512_vnni_x\n"
        "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu\n"
    )
    assert cpu(cpuinfo) == "Intel(R) Xeon(R) Processor (avx2, avx512f, avx512_vnni, amx_int8)"
    assert cpu("model name\t: AMD EPYC\nflags\t: fpu avx avx2\n") == "AMD EPYC (avx2)"
    assert cpu("model name\t: Old\nflags\t: fpu avx\n") == "Old (no avx2)"
    assert cpu("") == "unknown CPU"
