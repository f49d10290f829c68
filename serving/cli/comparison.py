"""Two models' predictions on the same rows: their metrics, the difference, what changed.

``compare_predictions`` builds the result ``switchyard model compare`` prints (``--json``
prints it as is); ``print_comparison`` draws it as tables. Nothing here runs a model: the
probabilities come from ``serving.cli.evaluate``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from intent.evaluation import label_ids, summarize

MESSAGE_WIDTH = 80
# Order of the changed rows: what got worse first.
CHANGE_ORDER = ("broken", "still_wrong", "fixed")


@dataclass
class Scored:
    """One model's predictions on the data file."""

    version: str
    model_version: str
    labels: tuple[str, ...]
    probs: np.ndarray

    @property
    def predicted(self) -> list[str]:
        return [self.labels[i] for i in self.probs.argmax(axis=1)]

    def summary(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return summarize(self.probs, label_ids(rows, self.labels), self.labels)


def _change(label: str, before: str, after: str) -> str:
    if after == label:
        return "fixed"
    return "broken" if before == label else "still_wrong"


def compare_predictions(
    rows: Sequence[Mapping[str, Any]], current: Scored, candidate: Scored
) -> dict[str, Any]:
    """Both models' metrics, their difference and every row whose top prediction changed."""
    ours, theirs = candidate.summary(rows), current.summary(rows)
    del ours["rows"], theirs["rows"]  # said once, at the top
    changed = [
        {
            "row": i,
            "message": row["message"],
            "history_turns": len(row.get("conversation_history") or []),
            "label": row["label"],
            "current": before,
            "candidate": after,
            "change": _change(row["label"], before, after),
        }
        for i, (row, before, after) in enumerate(
            zip(rows, current.predicted, candidate.predicted, strict=True)
        )
        if before != after
    ]
    changed.sort(key=lambda c: (CHANGE_ORDER.index(c["change"]), c["row"]))
    return {
        "rows": len(rows),
        "current": {"version": current.version, "model_version": current.model_version} | theirs,
        "candidate": {"version": candidate.version, "model_version": candidate.model_version}
        | ours,
        "difference": {key: ours[key] - theirs[key] for key in ("accuracy", "macro_f1", "ece")}
        | {
            "per_label_f1": {
                label: ours["per_label_f1"][label] - theirs["per_label_f1"][label]
                for label in theirs["per_label_f1"]
            }
        },
        "changed": changed,
        "counts": {
            "changed": len(changed),
            **{kind: sum(c["change"] == kind for c in changed) for kind in CHANGE_ORDER},
        },
    }


def _short(message: str, width: int = MESSAGE_WIDTH) -> str:
    text = " ".join(message.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _delta(value: float, *, lower_is_better: bool = False) -> Text:
    better = value < 0 if lower_is_better else value > 0
    style = "" if abs(value) < 5e-5 else ("green" if better else "red")
    return Text(f"{value:+.4f}", style=style)


def print_comparison(result: dict[str, Any], console: Console) -> None:
    """The metrics side by side, then the rows whose top prediction changed, and the counts."""
    console.print(_metrics_table(result))
    counts = result["counts"]
    if not result["changed"]:
        console.print("no top prediction changed")
        return
    console.print(_changes_table(result))
    console.print(
        f"fixed {counts['fixed']}, broken {counts['broken']}, still wrong "
        f"{counts['still_wrong']} ({counts['changed']} of {result['rows']} rows changed)"
    )


def _metrics_table(result: dict[str, Any]) -> Table:
    current, candidate, diff = result["current"], result["candidate"], result["difference"]
    metrics = Table(title=f"{result['data']} ({result['rows']} rows)", title_justify="left")
    metrics.add_column("metric")
    metrics.add_column(f"current\n{current['version']}", justify="right")
    metrics.add_column(f"candidate\n{candidate['version']}", justify="right")
    metrics.add_column("Δ", justify="right")
    for key, title in (("accuracy", "accuracy"), ("macro_f1", "macro-F1"), ("ece", "ECE")):
        metrics.add_row(
            title,
            f"{current[key]:.4f}",
            f"{candidate[key]:.4f}",
            _delta(diff[key], lower_is_better=key == "ece"),
        )
    metrics.add_section()
    for label, delta in diff["per_label_f1"].items():
        metrics.add_row(
            f"F1 {label}",
            f"{current['per_label_f1'][label]:.4f}",
            f"{candidate['per_label_f1'][label]:.4f}",
            _delta(delta),
        )
    return metrics


def _changes_table(result: dict[str, Any]) -> Table:
    changes = Table(
        title=f"top prediction changed ({result['counts']['changed']} rows)",
        title_justify="left",
    )
    for column in ("", "message", "turns", "label", "current → candidate"):
        changes.add_column(column)
    styles = {"broken": "red", "fixed": "green", "still_wrong": "yellow"}
    for change in result["changed"]:
        changes.add_row(
            Text(change["change"].replace("_", " "), style=styles[change["change"]]),
            Text(_short(change["message"])),
            str(change["history_turns"]),
            Text(change["label"]),
            Text(f"{change['current']} → {change['candidate']}"),
        )
    return changes
