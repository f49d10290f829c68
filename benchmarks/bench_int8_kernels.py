"""The shipped model's graphs as stored and as the runner loads them on this CPU
(``intent.session_source``: int8 weights unsigned where ONNX Runtime's signed kernel clips,
padding's attention fill at Softmax's fast range). A routed version runs as served: the
language check, then both routes' graphs.

Reports whether this CPU clips, the field set's macro-F1 and the largest change of any
probability between the two, and messages/s at batch 1 and 32 on one thread, the two taking
turns call by call. On a CPU that does not clip the two differ only in the padding fill. Writes
its section of benchmarks/RESULTS.md (in place of the previous one).

    python -m benchmarks.bench_int8_kernels [--model models/<version>]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_quantization import FIELD_SET, quality, read_jsonl, speeds
from benchmarks.common import REPO, RESULTS, machine, write_section
from intent import runner
from intent.int8_kernels import saturates_signed_weights
from intent.routed import open_model
from intent.runner import Classifier, resolve_model_dir


def load_both(model_dir: Path) -> dict[str, Classifier]:
    """The model as the runner loads it, and with its graphs as stored."""
    as_loaded = open_model(model_dir)
    chooser = runner.session_source
    runner.session_source = lambda path: path
    try:
        as_stored = open_model(model_dir)
    finally:
        runner.session_source = chooser
    return {"as stored": as_stored, "as the runner loads it": as_loaded}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="default: models/LATEST")
    parser.add_argument("--seconds", type=float, default=8.0, help="per model and batch size")
    args = parser.parse_args()
    model_dir = args.model or resolve_model_dir(REPO / "models")
    models = load_both(model_dir)
    rows = read_jsonl(FIELD_SET)
    report: dict[str, Any] = {
        "machine": machine(),
        "model": model_dir.name,
        "clips": saturates_signed_weights(),
        "variants": {},
    }
    probabilities = {}
    for name, model in models.items():
        print(f"quality: {name} ...", file=sys.stderr)
        report["variants"][name] = {"field": quality(model, rows)[0]}
        probabilities[name] = model.predict_rows(rows)
    first, second = probabilities.values()
    report["max_probability_change"] = float(np.abs(first - second).max())
    for batch in (1, 32):
        print(f"speed: batch {batch} ...", file=sys.stderr)
        for name, rate in speeds(models, batch, args.seconds).items():
            report["variants"][name].setdefault("msg_per_s", {})[batch] = rate
    print(json.dumps(report, indent=2))
    write_results(report, " ".join(sys.argv[1:]))


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Int8 kernels"


def write_results(report: dict[str, Any], argv: str) -> None:
    lines = [
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {report['machine']}. Model: `{report['model']}`. Command: "
        f"`{' '.join(['python -m benchmarks.bench_int8_kernels', argv]).strip()}`.\n",
        f"ONNX Runtime's uint8 x int8 kernel clips on this CPU: "
        f"{'yes' if report['clips'] else 'no'}. Largest change of any field-set probability "
        f"between the two: {report['max_probability_change']:.3g}.\n",
        "| graphs | field macro-F1 | field ECE | msg/s batch 1 | msg/s batch 32 |",
        "|---|---|---|---|---|",
    ]
    for name, row in report["variants"].items():
        lines.append(
            f"| {name} | {row['field']['macro_f1']:.4f} | {row['field']['ece']:.4f} | "
            f"{row['msg_per_s'][1]} | {row['msg_per_s'][32]} |"
        )
    write_section(HEADING, "\n".join(lines), RESULTS)


if __name__ == "__main__":
    main()
