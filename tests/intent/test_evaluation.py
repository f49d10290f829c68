"""intent.evaluation: the metrics every report and model card uses, and its data reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from intent.evaluation import (
    REPO_ROOT,
    DataFileError,
    classification_report,
    data_reference,
    read_rows,
    summarize,
)

LABELS = ["a", "b", "c"]


def test_classification_report_counts_zero_division_as_zero() -> None:
    y_true = np.array([0, 0, 1, 1])
    y_pred = np.array([0, 1, 1, 2])
    report = classification_report(y_true, y_pred, LABELS)
    assert report["accuracy"] == 0.5
    assert report["per_label"]["a"] == {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2}
    assert report["per_label"]["c"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert report["macro_f1"] == pytest.approx((2 / 3 + 0.5) / 2)  # labels with rows only
    assert report["confusion_matrix"] == [[1, 1, 0], [0, 1, 1], [0, 0, 0]]


def test_summarize_lists_the_labels_present_in_the_data() -> None:
    probs = np.array([[0.9, 0.05, 0.05], [0.2, 0.7, 0.1], [0.6, 0.3, 0.1]])
    summary = summarize(probs, np.array([0, 1, 1]), LABELS)
    assert summary["rows"] == 3
    assert set(summary["per_label_f1"]) == {"a", "b"}
    assert summary["accuracy"] == pytest.approx(2 / 3)


def test_read_rows_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"message": "hi", "label": "a"}\n\n{"message": "yo", "label": "z"}\n')
    with pytest.raises(DataFileError, match=r"rows.jsonl:3: unknown label 'z'"):
        read_rows(path, LABELS)
    rows = read_rows(path)
    assert rows[0]["conversation_history"] == []


def test_data_reference_is_relative_inside_the_repository(tmp_path: Path) -> None:
    inside = REPO_ROOT / "training" / "data" / "field_eval_v2.jsonl"
    assert data_reference(inside) == "training/data/field_eval_v2.jsonl"
    assert data_reference(tmp_path / "x.jsonl") == str((tmp_path / "x.jsonl").resolve())
