"""The JSON depth scan every request body meets before authentication (``switchyard.body_limit``).

It runs on bodies up to the size limit from anyone, so its cost must not depend on the body's
shape. For each shape, one MiB (the default limit), the scan's time and the time Python's JSON
parser takes to read the same body, in one run. Targets: the slowest shape's scan at most twice
the fastest's (the cost follows the size, not the nesting), and at most half of what parsing a
typical body of records costs. Writes its section of benchmarks/RESULTS.md.

    python -m benchmarks.bench_body_scan [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial

from tqdm import tqdm

from benchmarks.common import RESULTS, machine, write_section
from switchyard.body_limit import json_body_too_deep

MIB = 1 << 20
LIMIT = 64  # max_json_depth's default
TYPICAL = "records (a typical proxy body)"


def _flat(item: bytes) -> bytes:
    return b"[" + b",".join([item] * (MIB // (len(item) + 1))) + b"]"


def _blocks(depth: int) -> bytes:
    return _flat(b"[" * depth + b"]" * depth)


def shapes() -> dict[str, bytes]:
    """Bodies of about one MiB, each the worst case of some way of scanning."""
    return {
        "flat pairs `[[],[],…]`": _flat(b"[]"),
        "blocks of depth 32": _blocks(32),
        "blocks of depth 63 (just allowed)": _blocks(63),
        "brackets inside short strings": _flat(b'"[[[[{{{{"'),
        "escaped quotes and backslashes in strings": _flat(b'"\\\\\\"[[{{\\\\"'),
        TYPICAL: _flat(b'{"id": "r_1", "items": [{"sku": "A", "q": 2}]}'),
        "blocks of depth 63, UTF-16": _blocks(63).decode().encode("utf-16"),
    }


def best_of(repeat: int, call: Callable[[], object]) -> float:
    """The fastest of ``repeat`` calls, in ms (the least disturbed by other work)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def measure(repeat: int) -> list[dict[str, float | str]]:
    rows: list[dict[str, float | str]] = []
    for name, body in tqdm(shapes().items(), desc="shapes", file=sys.stderr):
        scan = best_of(repeat, partial(json_body_too_deep, body, LIMIT))
        parse = best_of(repeat, partial(json.loads, body))
        rows.append({"shape": name, "mib": len(body) / MIB, "scan": scan, "parse": parse})
    return rows


HEADING = "## Body depth scan"
COMMAND = "python -m benchmarks.bench_body_scan"


def targets(rows: list[dict[str, float | str]]) -> list[tuple[str, float, bool]]:
    """(target, measured ratio, holds) for the section's target table."""
    scans = [float(row["scan"]) for row in rows]
    typical_parse = next(float(row["parse"]) for row in rows if row["shape"] == TYPICAL)
    spread, against_parse = max(scans) / min(scans), max(scans) / typical_parse
    return [
        ("slowest shape's scan / fastest shape's scan (<= 2)", spread, spread <= 2),
        ("slowest shape's scan / parsing a typical body (<= 0.5)", against_parse,
         against_parse <= 0.5),
    ]  # fmt: skip


def write_results(rows: list[dict[str, float | str]], argv: str) -> None:
    lines = [
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {machine()}. Command: `{COMMAND} {argv}`.\n".replace(" `.", "`."),
        "The depth scan (`switchyard.body_limit`, limit 64) and `json.loads` of the same "
        "body, the fastest of the repeats of each:\n",
        "| body | MiB | scan ms | json.loads ms |",
        "|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['shape']} | {float(row['mib']):.2f} | {float(row['scan']):.2f} "
            f"| {float(row['parse']):.2f} |"
        )
    lines += ["", "| target | measured | holds |", "|---|---|---|"]
    for target, measured, holds in targets(rows):
        lines.append(f"| {target} | {measured:.2f} | {'yes' if holds else 'NO'} |")
    write_section(HEADING, "\n".join(lines), RESULTS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="calls per shape and side")
    args = parser.parse_args()
    rows = measure(args.repeat)
    for row in rows:
        print(json.dumps(row))
    write_results(rows, " ".join(sys.argv[1:]).strip())


if __name__ == "__main__":
    main()
