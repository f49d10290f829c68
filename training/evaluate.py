"""Evaluate a model directory on a JSONL file (or a rebuilt split) beside the TF-IDF baseline.

    python -m training.evaluate --model models/<version> --data FILE.jsonl
    python -m training.evaluate --model models/<version> --split test

``--split`` reads Bitext from ``--bitext`` (default: the sample in ``training/data/bitext/``).
Prints a metrics table and writes ``metrics.json``, ``confusion_matrix.png`` and
``reliability_diagram.png`` to ``--out`` (default ``<model>/eval/<data name>/``).

Rows may carry ``language`` (ISO 639-1) and/or ``slice`` (e.g. ``typos``, ``sms``, ``short``):
then accuracy and macro-F1 are also given per language and per slice (``by_language`` and
``by_slice`` in each model's entry of ``metrics.json``, and printed after the table).

Model directories do not ship the baseline: it is fitted again on the model's training split,
rebuilt from its card (``baseline_for_model``), and cached under ``var/baselines/``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from intent import evaluation
from intent.evaluation import (
    GROUP_KEYS,
    TURNS_ENTRY,
    classification_report,
    expected_calibration_error,
    reliability_bins,
)
from intent.model_store import read_card
from intent.routed import open_model
from intent.runner import Classifier
from training import plots
from training.baseline import baseline_probs, cached_baseline
from training.cli_args import parse_args
from training.labels import LABEL_TO_ID, LABELS
from training.sources import BITEXT_SAMPLE, WRITTEN_DIR


@dataclass
class EvaluateArgs:
    """Command-line arguments of ``python -m training.evaluate``."""

    model: str = field(metadata={"help": "model directory, e.g. models/<model_version>"})
    data: str | None = field(
        default=None, metadata={"help": "JSONL file: message, conversation_history?, label"}
    )
    split: str | None = field(
        default=None,
        metadata={"help": "instead of --data: rebuild this split (train/validation/test)"},
    )
    bitext: str | None = field(
        default=str(BITEXT_SAMPLE),
        metadata={
            "help": "Bitext CSV path or 'hub', read with --split when the model used it "
            "(default: the sample in training/data/bitext/)"
        },
    )
    out: str | None = field(default=None, metadata={"help": "output directory"})
    no_baseline: bool = field(default=False, metadata={"help": "skip the TF-IDF baseline"})


def most_confused_pairs(y_true: np.ndarray, y_pred: np.ndarray, k: int = 10) -> list[dict]:
    """The k most frequent (true, predicted) error pairs."""
    counts = Counter(
        (LABELS[t], LABELS[p])
        for t, p in zip(y_true.tolist(), y_pred.tolist(), strict=True)
        if t != p
    )
    return [{"true": t, "predicted": p, "count": n} for (t, p), n in counts.most_common(k)]


def scores_by_group(
    rows: list[dict[str, Any]], y_true: np.ndarray, y_pred: np.ndarray
) -> dict[str, dict[str, dict[str, Any]]]:
    """Scores per language, slice and turns (``intent.evaluation.scores_by_group``)."""
    return evaluation.scores_by_group(rows, y_true, y_pred, LABELS)


def score(
    probs: np.ndarray, y_true: np.ndarray, rows: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Classification metrics plus calibration (ECE, reliability bins) of one model; with
    ``rows``, also the scores per language and per slice (``scores_by_group``)."""
    y_pred = probs.argmax(axis=1)
    report = classification_report(y_true, y_pred, LABELS)
    report["ece"] = expected_calibration_error(probs, y_true)
    report["reliability"] = reliability_bins(probs, y_true)
    report["most_confused"] = most_confused_pairs(y_true, y_pred)
    if rows is not None:
        report.update(scores_by_group(rows, y_true, y_pred))
    return report


def evaluate_rows(
    model_dir: Path,
    rows: list[dict[str, Any]],
    out_dir: Path,
    *,
    name: str,
    with_baseline: bool = True,
    model: Classifier | None = None,
    baseline: Any = None,
) -> dict[str, Any]:
    """Score the int8 model as served (and the baseline) on rows; write JSON and the two PNGs.

    ``baseline``: a fitted TF-IDF baseline; None rebuilds the model's own (``baseline_for_model``
    with the Bitext sample).
    """
    model = model or open_model(model_dir, intra_op_threads=0)
    y_true = np.array([LABEL_TO_ID[r["label"]] for r in rows])
    probs = model.predict_rows(rows)
    result: dict[str, Any] = {
        "model_version": model.info.model_version,
        "data": name,
        "examples": len(rows),
        "temperature": model.info.temperature,
        "transformer": score(probs, y_true, rows),
    }
    # Rows whose history decides the intent: reported apart (a model can read single messages
    # well and still ignore the conversation).
    multi = np.array([bool(r.get("conversation_history")) for r in rows])
    if multi.any():
        result["transformer"]["multi_turn"] = {
            "rows": int(multi.sum()),
            "accuracy": float((probs[multi].argmax(axis=1) == y_true[multi]).mean()),
        }
    if with_baseline:
        if baseline is None:
            baseline = baseline_for_model(model_dir)
        result["baseline"] = score(baseline_probs(baseline, rows), y_true, rows)
    errors = []
    pred = probs.argmax(axis=1)
    for i in np.flatnonzero(pred != y_true):
        errors.append(
            {
                "message": rows[i]["message"],
                "conversation_history": rows[i].get("conversation_history") or [],
                "label": rows[i]["label"],
                "predicted": LABELS[pred[i]],
                "confidence": float(probs[i].max()),
            }
        )
    result["worst_errors"] = sorted(errors, key=lambda e: -e["confidence"])[:25]
    out_dir.mkdir(parents=True, exist_ok=True)
    plots.plot_confusion_matrix(
        result["transformer"]["confusion_matrix"],
        out_dir / "confusion_matrix.png",
        title=f"{model.info.model_version} on {name}",
    )
    plots.plot_reliability(
        result["transformer"]["reliability"],
        out_dir / "reliability_diagram.png",
        ece=result["transformer"]["ece"],
        title="Calibrated confidence",
    )
    (out_dir / "metrics.json").write_text(json.dumps(result, indent=2))
    return result


def format_table(result: dict[str, Any]) -> str:
    """A plain-text table: per-label F1 and the headline metrics, transformer beside baseline."""
    models = [m for m in ("transformer", "baseline") if m in result]
    head = f"{'label':<18}" + "".join(f"{m + ' P/R/F1':>30}" for m in models)
    lines = [f"{result['model_version']} on {result['data']} ({result['examples']} examples)", head]
    for label in LABELS:
        cells = []
        for m in models:
            s = result[m]["per_label"][label]
            cells.append(
                f"{s['precision']:.3f}/{s['recall']:.3f}/{s['f1']:.3f} n={s['support']:<4}"
            )
        lines.append(f"{label:<18}" + "".join(f"{c:>30}" for c in cells))
    for key in ("accuracy", "macro_f1", "ece"):
        lines.append(f"{key:<18}" + "".join(f"{result[m][key]:>30.4f}" for m in models))
    for entry in (*GROUP_KEYS.values(), TURNS_ENTRY):
        if entry not in result["transformer"]:
            continue
        lines.append(f"{entry:<18}" + "".join(f"{m + ' acc/F1':>30}" for m in models))
        for group, s in result["transformer"][entry].items():
            cells = [
                f"{result[m][entry][group]['accuracy']:.3f}/"
                f"{result[m][entry][group]['macro_f1']:.3f} n={s['rows']:<4}"
                for m in models
            ]
            lines.append(f"  {group:<16}" + "".join(f"{c:>30}" for c in cells))
    return "\n".join(lines)


def load_split_for_model(
    model_dir: Path, split: str, bitext: str | None = str(BITEXT_SAMPLE)
) -> list[dict[str, Any]]:
    """Rebuild one split exactly as the model's training run made it (from its model card)."""
    return load_splits_for_model(model_dir, bitext)[split]


def load_splits_for_model(
    model_dir: Path, bitext: str | None = str(BITEXT_SAMPLE)
) -> dict[str, list[dict[str, Any]]]:
    """Rebuild the train, validation and test splits as the model's training run made them."""
    from training.dataset import DataConfig, build_splits

    card = read_card(Path(model_dir))
    d = card["data"]
    uses_bitext = any(s["name"].startswith("bitext") for s in d["sources"])
    uses_written = any(s["name"] == "switchyard-written" for s in d["sources"])
    if uses_bitext and (bitext or "none").lower() == "none":
        raise ValueError("this model was trained with Bitext data: pass its CSV path (or 'hub')")
    config = DataConfig(
        bitext=bitext if uses_bitext else None,
        written=str(WRITTEN_DIR) if uses_written else None,
        seed=d["seed"],
        val_frac=d["val_frac"],
        test_frac=d["test_frac"],
        near_dup_threshold=d["near_dup_threshold"],
    )
    splits, info = build_splits(config)
    if info["split_fingerprints"] != d["split_fingerprints"]:
        print(
            "warning: rebuilt splits differ from the ones recorded in the model card",
            file=sys.stderr,
        )
    return splits


def baseline_for_model(
    model_dir: Path,
    bitext: str | None = str(BITEXT_SAMPLE),
    *,
    splits: dict[str, list[dict[str, Any]]] | None = None,
    cache_dir: Path | None = None,
) -> Any:
    """The TF-IDF baseline the model's training run fitted: the same recipe on the same rows
    (its training split, subset and repeats from its card), deterministic; cached under
    ``cache_dir`` (default ``var/baselines/``). ``splits``: the model's, if already rebuilt."""
    # Imported here: training.train imports this module.
    from training.train import training_rows

    card = read_card(Path(model_dir))
    run = card["training"]
    splits = splits or load_splits_for_model(Path(model_dir), bitext)
    rows = training_rows(splits["train"], run.get("subset"), run.get("written_repeat", 1))
    return cached_baseline(rows, run["seed"], cache_dir)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(EvaluateArgs, argv)
    model_dir = Path(args.model)
    if bool(args.data) == bool(args.split):
        sys.exit("pass exactly one of --data FILE.jsonl or --split NAME")
    splits = None
    if args.data:
        from training.sources import read_jsonl

        rows = read_jsonl(Path(args.data))
        name = Path(args.data).stem
    else:
        try:
            splits = load_splits_for_model(model_dir, args.bitext)
        except ValueError as exc:
            sys.exit(str(exc))
        rows = splits[args.split]
        name = f"{args.split}-split"
    baseline = None
    if not args.no_baseline:
        try:
            baseline = baseline_for_model(model_dir, args.bitext, splits=splits)
        except ValueError as exc:  # its training split cannot be rebuilt without Bitext
            sys.exit(f"{exc}, or --no-baseline")
    out_dir = Path(args.out) if args.out else model_dir / "eval" / name
    result = evaluate_rows(
        model_dir,
        rows,
        out_dir,
        name=name,
        with_baseline=not args.no_baseline,
        baseline=baseline,
    )
    print(format_table(result))
    print("most confused (true -> predicted):")
    for pair in result["transformer"]["most_confused"]:
        print(f"  {pair['true']} -> {pair['predicted']}: {pair['count']}")
    print(f"wrote {out_dir / 'metrics.json'}")
    return result


if __name__ == "__main__":
    main()
