"""Scoring a model on labelled rows: accuracy, macro-F1, per-label P/R/F1 and ECE (numpy only).

Shared by ``training`` (evaluation, the model card) and ``serving.cli.evaluate``
(``switchyard model compare`` and ``score``), so a number means the same thing wherever it is
printed. The probabilities come from ``intent.runner.IntentModel``, as served; nothing here
runs a model.

A *field set* is a hand-written data file the model never trained on. Its scores live in the
model card under ``metrics.field_sets.<name>``, with the file's SHA-256, so two cards can be
compared only when they were scored on the same file (the promotion gate of ``model use``,
``intent.model_store``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ECE_BINS = 15
REPO_ROOT = Path(__file__).resolve().parent.parent
# The default field set: scored into every card at the end of training, named FIELD_SET_NAME.
FIELD_SET_PATH = REPO_ROOT / "training" / "data" / "field_eval_v2.jsonl"
FIELD_SET_NAME = "field"


class DataFileError(ValueError):
    """A data file that cannot be read as evaluation rows (the message says where)."""


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_rows(path: Path, labels: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows ``{message, conversation_history, label}`` of a JSONL file (history optional).

    Raises ``DataFileError`` naming the line of the first bad row, a label outside
    ``labels`` (when given) included; ``OSError`` when the file cannot be opened.
    """
    path = Path(path)
    known = set(labels) if labels is not None else None
    rows = []
    with path.open(encoding="utf-8") as fh:
        try:
            lines = list(fh)
        except UnicodeDecodeError as exc:
            raise DataFileError(f"{path}: not UTF-8 text ({exc})") from exc
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFileError(f"{where}: not a JSON object ({exc.msg})") from exc
        if not isinstance(row, dict) or not isinstance(row.get("message"), str):
            raise DataFileError(f"{where}: needs a string 'message'")
        label = row.get("label")
        if not isinstance(label, str) or (known is not None and label not in known):
            raise DataFileError(f"{where}: unknown label {label!r}")
        history = row.get("conversation_history") or []
        if not isinstance(history, list):
            raise DataFileError(f"{where}: 'conversation_history' must be a list of turns")
        row["conversation_history"] = history
        rows.append(row)
    return rows


def label_ids(rows: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> np.ndarray:
    """The index of each row's label in ``labels`` (a model's logit order)."""
    index = {label: i for i, label in enumerate(labels)}
    return np.array([index[row["label"]] for row in rows], dtype=np.int64)


def expected_calibration_error(
    probs: np.ndarray, y_true: np.ndarray, bins: int = ECE_BINS
) -> float:
    """ECE of the top-1 confidence over equal-width bins."""
    confidence = probs.max(axis=1)
    correct = probs.argmax(axis=1) == y_true
    edges = np.linspace(0.0, 1.0, bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        in_bin = (confidence > lo) & (confidence <= hi)
        if in_bin.any():
            ece += in_bin.mean() * abs(correct[in_bin].mean() - confidence[in_bin].mean())
    return float(ece)


def reliability_bins(
    probs: np.ndarray, y_true: np.ndarray, bins: int = ECE_BINS
) -> list[dict[str, Any]]:
    """Per-bin count, mean confidence and accuracy (the reliability diagram's data)."""
    confidence = probs.max(axis=1)
    correct = probs.argmax(axis=1) == y_true
    edges = np.linspace(0.0, 1.0, bins + 1)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        in_bin = (confidence > lo) & (confidence <= hi)
        n = int(in_bin.sum())
        out.append(
            {
                "lo": float(lo),
                "hi": float(hi),
                "count": n,
                "confidence": float(confidence[in_bin].mean()) if n else None,
                "accuracy": float(correct[in_bin].mean()) if n else None,
            }
        )
    return out


def classification_report(
    y_true: np.ndarray, y_pred: np.ndarray, labels: Sequence[str]
) -> dict[str, Any]:
    """Accuracy, macro-F1, per-label precision/recall/F1/support and the confusion matrix.

    Ratios with a zero denominator count as 0; macro-F1 averages the labels present in
    ``y_true`` (a label with no rows has no F1 to speak of).
    """
    n = len(labels)
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    confusion = np.zeros((n, n), dtype=np.int64)
    np.add.at(confusion, (y_true, y_pred), 1)
    tp = np.diag(confusion).astype(float)
    predicted = confusion.sum(axis=0).astype(float)
    support = confusion.sum(axis=1)
    precision = np.divide(tp, predicted, out=np.zeros(n), where=predicted > 0)
    recall = np.divide(tp, support, out=np.zeros(n), where=support > 0)
    f1_denominator = predicted + support
    f1 = np.divide(2 * tp, f1_denominator, out=np.zeros(n), where=f1_denominator > 0)
    present = support > 0
    return {
        "accuracy": float((y_true == y_pred).mean()) if len(y_true) else 0.0,
        "macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        "per_label": {
            labels[i]: {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(support[i]),
            }
            for i in range(n)
        },
        "confusion_matrix": confusion.tolist(),
    }


def summarize(probs: np.ndarray, y_true: np.ndarray, labels: Sequence[str]) -> dict[str, Any]:
    """The headline numbers of one model on one data set: what a field-set entry records.

    ``per_label_f1`` holds the labels present in the data (those macro-F1 averages).
    """
    report = classification_report(y_true, probs.argmax(axis=1), labels)
    return {
        "rows": len(y_true),
        "accuracy": report["accuracy"],
        "macro_f1": report["macro_f1"],
        "ece": expected_calibration_error(probs, y_true),
        "per_label_f1": {
            label: scores["f1"]
            for label, scores in report["per_label"].items()
            if scores["support"] > 0
        },
    }


# Row keys that cut a data set into groups scored apart: key -> entry of the report. Rows also
# group by turns: "multi_turn" (a conversation history) or "single".
GROUP_KEYS = {"language": "by_language", "slice": "by_slice"}
TURNS_ENTRY = "by_turns"


def _turns(row: Mapping[str, Any]) -> str:
    return "multi_turn" if row.get("conversation_history") else "single"


def scores_by_group(
    rows: Sequence[Mapping[str, Any]],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    labels: Sequence[str],
) -> dict[str, dict[str, dict[str, Any]]]:
    """Rows, accuracy and macro-F1 per value of each of ``GROUP_KEYS`` the rows carry, and
    per ``by_turns`` group when the data holds both single messages and conversations.

    ``{"by_language": {"de": {"rows": 50, "accuracy": ..., "macro_f1": ...}}, "by_slice": ...}``;
    a key no row carries is left out, and rows without a key are in none of its groups.
    """
    keyed: dict[str, list[Any]] = {
        entry: [row.get(key) or None for row in rows] for key, entry in GROUP_KEYS.items()
    }
    turns = [_turns(row) for row in rows]
    if len(set(turns)) > 1:
        keyed[TURNS_ENTRY] = turns
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for entry, values in keyed.items():
        for group in sorted({v for v in values if v}):
            mask = np.array([v == group for v in values])
            report = classification_report(y_true[mask], y_pred[mask], labels)
            out.setdefault(entry, {})[group] = {
                "rows": int(mask.sum()),
                "accuracy": report["accuracy"],
                "macro_f1": report["macro_f1"],
            }
    return out


def data_reference(path: Path, root: Path = REPO_ROOT) -> str:
    """How a card names a data file: relative to the repository when inside it, else absolute."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        return str(resolved)


def field_set_entry(
    path: Path, probs: np.ndarray, rows: Sequence[Mapping[str, Any]], labels: Sequence[str]
) -> dict[str, Any]:
    """``metrics.field_sets.<name>`` of a card: the scores and which file they came from."""
    y_true = label_ids(rows, labels)
    scores = summarize(probs, y_true, labels)
    return {
        "data": data_reference(path),
        "sha256": sha256_file(path),
        "rows": scores.pop("rows"),
        **scores,
        **scores_by_group(rows, y_true, probs.argmax(axis=1), labels),
        "scored_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def set_field_set(card: dict[str, Any], name: str, entry: Mapping[str, Any]) -> None:
    """Put ``entry`` into ``card`` under ``metrics.field_sets.<name>`` (replacing one there)."""
    card.setdefault("metrics", {}).setdefault("field_sets", {})[name] = dict(entry)


def field_set_of(card: Mapping[str, Any] | None, name: str = FIELD_SET_NAME) -> dict | None:
    """A card's ``metrics.field_sets.<name>`` entry, or None when it has none."""
    if not card:
        return None
    entry = card.get("metrics", {}).get("field_sets", {}).get(name)
    return entry if isinstance(entry, dict) else None
