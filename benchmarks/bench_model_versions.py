"""Two model versions' speed on the same messages: English at batch 32 (what English traffic
pays for a new version) and the six other languages of field set v3, at batch 32 and 1.

Each model runs on one thread; the two take turns call by call (neighbouring calls see the
same host, whose speed drifts over seconds) and each is reported from its 10th-percentile
call time. The messages are the field sets' own, in batches of consecutive rows, so lengths
are what real traffic sends. Writes its section of benchmarks/RESULTS.md (in place of the
previous one).

    python -m benchmarks.bench_model_versions [--new models/<version>] [--old models/<version>]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from benchmarks.common import REPO, RESULTS, machine, write_section
from intent.evaluation import read_rows
from intent.routed import open_model
from intent.runner import Classifier, resolve_model_dir
from intent.text_format import format_input

DATA = REPO / "training" / "data"
ENGLISH = DATA / "field_eval_v2.jsonl"
OTHER_LANGUAGES = DATA / "field_eval_v3.jsonl"
HEADING = "## Model versions, speed"


def batches(path: Path, size: int, count: int = 8) -> list[list[tuple[str, str | None]]]:
    """``count`` batches of ``size`` consecutive rows of ``path``, as the runner takes them."""
    rows = read_rows(path)
    pairs = [format_input(r["message"], r.get("conversation_history")) for r in rows]
    return [
        [pairs[(start + i) % len(pairs)] for i in range(size)]
        for start in range(0, count * size, size)
    ]


def rates(models: dict[str, Classifier], work: list[list[Any]], seconds: float) -> dict[str, float]:
    """Messages/s of each model over the batches in ``work``, taking turns call by call."""
    calls: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.predict(work[0])
    started = time.perf_counter()
    turn = 0
    while time.perf_counter() - started < seconds * len(models):
        batch = work[turn % len(work)]
        for name, model in models.items():
            call = time.perf_counter()
            model.predict(batch)
            calls[name].append((time.perf_counter() - call) / len(batch))
        turn += 1
    return {name: round(1 / float(np.percentile(times, 10)), 1) for name, times in calls.items()}


def other_version(models_dir: Path, new: Path) -> Path:
    """The newest model directory in ``models_dir`` other than ``new``."""
    others = sorted(p.parent for p in models_dir.glob("*/model_card.json") if p.parent != new)
    if not others:
        raise SystemExit(f"no other model version in {models_dir} to compare {new.name} with")
    return others[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--new", type=Path, default=None, help="default: models/LATEST")
    parser.add_argument("--old", type=Path, default=None, help="default: the other version")
    parser.add_argument("--seconds", type=float, default=10.0, help="per model and scenario")
    args = parser.parse_args()
    new = (args.new or resolve_model_dir(REPO / "models")).resolve()
    old = (args.old or other_version(REPO / "models", new)).resolve()
    models = {"old": open_model(old), "new": open_model(new)}
    scenarios = {
        "English, batch 32": batches(ENGLISH, 32),
        "six languages, batch 32": batches(OTHER_LANGUAGES, 32),
        "English, batch 1": batches(ENGLISH, 1, count=64),
    }
    report: dict[str, Any] = {"machine": machine(), "old": old.name, "new": new.name}
    for scenario, work in tqdm(scenarios.items(), desc="scenarios", file=sys.stderr):
        measured = rates(models, work, args.seconds)
        report[scenario] = measured | {"new_over_old": round(measured["new"] / measured["old"], 3)}
    print(json.dumps(report, indent=2))
    write_results(report, " ".join(sys.argv[1:]))


def write_results(report: dict[str, Any], argv: str) -> None:
    lines = [
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {report['machine']}. Command: "
        f"`{' '.join(['python -m benchmarks.bench_model_versions', argv]).strip()}`. "
        "One thread each, the two models taking turns call by call, messages/s from each "
        "one's 10th-percentile call.\n",
        f"| messages | {report['old']} msg/s | {report['new']} msg/s | new ÷ old |",
        "|---|---|---|---|",
    ]
    for scenario, row in report.items():
        if isinstance(row, dict):
            lines.append(f"| {scenario} | {row['old']} | {row['new']} | {row['new_over_old']} |")
    write_section(HEADING, "\n".join(lines), RESULTS)


if __name__ == "__main__":
    main()
