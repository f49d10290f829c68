"""Classification and calibration metrics shared by training, evaluation and the notebook."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from intent.probabilities import softmax as softmax  # the one softmax, used as metrics.softmax
from training.labels import LABELS

ECE_BINS = 15


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


def reliability_bins(probs: np.ndarray, y_true: np.ndarray, bins: int = ECE_BINS) -> list[dict]:
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


def classification_report(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, Any]:
    """Accuracy, macro-F1, per-label precision/recall/F1/support and the confusion matrix."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    ids = list(range(len(LABELS)))
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=ids, zero_division=0)
    present = s > 0
    return {
        "accuracy": float((y_true == y_pred).mean()) if len(y_true) else 0.0,
        "macro_f1": float(f[present].mean()) if present.any() else 0.0,
        "per_label": {
            LABELS[i]: {
                "precision": float(p[i]),
                "recall": float(r[i]),
                "f1": float(f[i]),
                "support": int(s[i]),
            }
            for i in ids
        },
        "confusion_matrix": confusion_matrix(y_true, y_pred, labels=ids).tolist(),
    }


def most_confused_pairs(y_true: np.ndarray, y_pred: np.ndarray, k: int = 10) -> list[dict]:
    """The k most frequent (true, predicted) error pairs."""
    counts = Counter(
        (LABELS[t], LABELS[p])
        for t, p in zip(y_true.tolist(), y_pred.tolist(), strict=True)
        if t != p
    )
    return [{"true": t, "predicted": p, "count": n} for (t, p), n in counts.most_common(k)]
