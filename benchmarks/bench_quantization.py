"""The shipped int8 scheme beside fp32 and shipped models: quality, speed and batch invariance.

From one trained model's fp32 ONNX graph, builds fp32 and the channel-wise int8 graph
(``training.export.quantize_int8``, what ``training.train`` ships) into model directories
beside the shipped files, and measures them, with any shipped model directories given by
``--versus`` (the previous version, v1 as the speed bar), through ``intent.runner.IntentModel``
(what the replicas run):

* quality: accuracy, macro-F1 and ECE on the test split and the field set, and top-1
  agreement with fp32;
* speed: messages/s at batch 1 and 32 on one thread (short support messages), the models
  taking turns call by call, from each one's 10th-percentile call time;
* invariance: the largest change of any confidence of 40 probe messages between being
  scored alone, inside a batch of 64 short messages, and next to a 50-turn history.

The other schemes it used to compare (dynamic, static, blockwise, rowwise) are gone from the
code; their last measurements are in benchmarks/RESULTS.md, "Quantization schemes that lost
(removed from the code)".

Prints JSON and writes its section of benchmarks/RESULTS.md (in place of the previous one).

    python -m benchmarks.bench_quantization --model models/<version> \\
        --fp32 runs/<version>/model.fp32.onnx --test runs/<version>/splits/test.jsonl \\
        --calibration runs/<version>/splits/train.jsonl --versus models/<previous version>
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import REPO, RESULTS, machine, write_section
from intent.evaluation import classification_report, expected_calibration_error
from intent.runner import MODEL_CARD, Classifier, IntentModel
from intent.text_format import EMOJI_AS_UNK, format_input

FIELD_SET = REPO / "training" / "data" / "field_eval_v2.jsonl"
SCHEMES = ("fp32", "channelwise")  # the fp32 graph, and the int8 one training ships
SHORT = [
    "where is my order", "cancel it please", "I want a refund", "is this in stock in blue?",
    "my card was charged twice", "change my delivery address", "thanks, great service!",
    "the parcel never arrived", "how do I return these shoes", "this is unacceptable",
]  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def build_variant(
    model_dir: Path, fp32: Path, scheme: str, out: Path, calibration_rows: list[dict[str, Any]]
) -> Path:
    """A model directory with the shipped files and this scheme's ``model.onnx``."""
    from training import export

    target = out / scheme
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(model_dir, target, ignore=shutil.ignore_patterns("model.onnx", "eval"))
    if scheme == "fp32":
        shutil.copy(fp32, target / "model.onnx")
    else:
        card = json.loads((model_dir / MODEL_CARD).read_text())
        emoji_style = card.get("input", {}).get("emoji") or EMOJI_AS_UNK  # what the model reads
        calibration = export.calibration_feeds(model_dir, calibration_rows, emoji_style)
        export.quantize_int8(fp32, target / "model.onnx", calibration=calibration)
    return target


def quality(model: Classifier, rows: list[dict[str, Any]]) -> tuple[dict[str, float], np.ndarray]:
    probs = model.predict_rows(rows)
    index = {label: i for i, label in enumerate(model.info.labels)}
    truth = np.array([index[r["label"]] for r in rows])
    predicted = probs.argmax(axis=1)
    summary = {
        "accuracy": float((predicted == truth).mean()),
        "macro_f1": float(classification_report(truth, predicted, model.info.labels)["macro_f1"]),
        "ece": float(expected_calibration_error(probs, truth)),
    }
    return summary, predicted


def speeds(models: Mapping[str, Classifier], batch: int, seconds: float) -> dict[str, int]:
    """Messages/s of each model at ``batch``, the models taking turns call by call for about
    ``seconds`` each (neighbouring calls see the same host, whose speed drifts over seconds),
    from each model's 10th-percentile call time (what the host's noise moves least)."""
    pairs = [format_input(SHORT[i % len(SHORT)], None) for i in range(batch)]
    calls: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.predict(pairs)
    started = time.perf_counter()
    while time.perf_counter() - started < seconds * len(models):
        for name, model in models.items():
            call = time.perf_counter()
            model.predict(pairs)
            calls[name].append(time.perf_counter() - call)
    return {name: round(batch / float(np.percentile(times, 10))) for name, times in calls.items()}


def invariance(model: IntentModel, probes: list[dict[str, Any]]) -> float:
    """Largest |Δ confidence| of any probe between alone, in 64 short ones, beside a history."""
    history = [{"role": "customer" if i % 2 else "agent", "text": f"turn {i}: still waiting on "
                "order 5521 from last week, any news?"} for i in range(50)]  # fmt: skip
    long_pair = format_input("and what now?", history)
    fillers = [format_input(SHORT[i % len(SHORT)], None) for i in range(63)]
    worst = 0.0
    for row in probes:
        pair = format_input(row["message"], row.get("conversation_history"))
        alone = model.predict([pair])[0]
        crowd = model.predict([*fillers[:31], pair, *fillers[31:]])[31]
        beside = model.predict([pair, long_pair])[0]
        worst = max(worst, float(np.abs(alone - crowd).max()), float(np.abs(alone - beside).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="A trained model directory.")
    parser.add_argument("--fp32", type=Path, required=True, help="Its fp32 ONNX graph.")
    parser.add_argument("--test", type=Path, required=True, help="Its test split (JSONL).")
    parser.add_argument(
        "--calibration",
        type=Path,
        help="Rows whose activations fix the channelwise scales (JSONL; pass the training "
        "split, as training does; default: --test).",
    )
    parser.add_argument(
        "--schemes", default=",".join(SCHEMES), help=f"A subset of {','.join(SCHEMES)}."
    )
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="quant-")))
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--versus", type=Path, action="append", default=[],
        help="A model directory as shipped (e.g. an earlier version) to score on the field set "
        "and to time in the same rounds; repeatable.",
    )  # fmt: skip
    args = parser.parse_args()
    unknown = set(args.schemes.split(",")) - set(SCHEMES)
    if unknown:
        parser.error(f"--schemes: {', '.join(sorted(unknown))} (there are {', '.join(SCHEMES)})")

    test_rows = read_jsonl(args.test)
    field_rows = read_jsonl(FIELD_SET)
    calibration_rows = read_jsonl(args.calibration or args.test)
    probes = field_rows[::11][:40]
    report: dict[str, Any] = {"machine": machine(), "model": args.model.name, "variants": {}}
    fp32_predictions: dict[str, np.ndarray] = {}
    models: dict[str, IntentModel] = {}
    for scheme in args.schemes.split(","):
        print(f"{scheme}: building", file=sys.stderr)
        model = models[scheme] = IntentModel(build_variant(args.model, args.fp32, scheme,
                                                           args.out, calibration_rows))  # fmt: skip
        row: dict[str, Any] = {"size_mb": round((args.out / scheme / "model.onnx").stat().st_size
                                                / 2**20, 1)}  # fmt: skip
        for name, rows in (("test", test_rows), ("field", field_rows)):
            metrics, predicted = quality(model, rows)
            row[name] = metrics
            if scheme == "fp32":
                fp32_predictions[name] = predicted
            elif name in fp32_predictions:
                row[name]["agreement_with_fp32"] = float(
                    (predicted == fp32_predictions[name]).mean()
                )
        row["max_confidence_change"] = invariance(model, probes)
        report["variants"][scheme] = row
    for shipped in args.versus:
        name = f"{shipped.name} (as shipped)"
        print(f"{name}: loading", file=sys.stderr)
        model = models[name] = IntentModel(shipped)
        report["variants"][name] = {
            "size_mb": round((shipped / "model.onnx").stat().st_size / 2**20, 1),
            "field": quality(model, field_rows)[0],
            "max_confidence_change": invariance(model, probes),
        }
    # Speed last, the schemes taking turns call by call: the host's speed drifts.
    for batch in (1, 32):
        for scheme, rate in speeds(models, batch, seconds=6.0).items():
            report["variants"][scheme].setdefault("msg_per_s", {})[batch] = rate
    for scheme, row in report["variants"].items():
        print(f"  {scheme}: {json.dumps(row)}", file=sys.stderr)
    print(json.dumps(report, indent=2))
    if not args.no_write:
        write_results(report, " ".join(sys.argv[1:]))


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Quantization schemes"


def write_results(report: dict[str, Any], argv: str) -> None:
    lines = [
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {report['machine']}. Model: `{report['model']}`. Command: "
        f"`python -m benchmarks.bench_quantization {argv}`.\n",
        "| scheme | test macro-F1 | test agreement with fp32 | field macro-F1 | field ECE | "
        "msg/s batch 1 | msg/s batch 32 | max Δ confidence (alone / batch of 64 / beside a "
        "50-turn history) | size MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for scheme, row in report["variants"].items():
        test = row.get("test", {})  # an earlier version: its own test split is another
        agreement = test.get("agreement_with_fp32")
        macro_f1 = f"{test['macro_f1']:.3f}" if test else "—"
        lines.append(
            f"| {scheme} | {macro_f1} | "
            f"{'—' if agreement is None else f'{agreement:.4f}'} | "
            f"{row['field']['macro_f1']:.3f} | {row['field']['ece']:.3f} | "
            f"{row['msg_per_s'][1]} | {row['msg_per_s'][32]} | "
            f"{row['max_confidence_change']:.2g} | {row['size_mb']} |"
        )
    write_section(HEADING, "\n".join(lines), RESULTS)


if __name__ == "__main__":
    main()
