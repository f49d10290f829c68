"""Classification and calibration metrics shared by training, evaluation and the notebook.

The numbers themselves come from ``intent.evaluation`` (shared with ``switchyard model
compare``/``score``); this module fixes the label order to ``training.labels.LABELS``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from intent import evaluation
from intent.evaluation import ECE_BINS as ECE_BINS
from intent.evaluation import expected_calibration_error as expected_calibration_error
from intent.evaluation import reliability_bins as reliability_bins
from intent.probabilities import softmax as softmax  # the one softmax, used as metrics.softmax
from training.labels import LABELS


def classification_report(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, Any]:
    """Accuracy, macro-F1, per-label precision/recall/F1/support and the confusion matrix."""
    return evaluation.classification_report(y_true, y_pred, LABELS)


def most_confused_pairs(y_true: np.ndarray, y_pred: np.ndarray, k: int = 10) -> list[dict]:
    """The k most frequent (true, predicted) error pairs."""
    counts = Counter(
        (LABELS[t], LABELS[p])
        for t, p in zip(y_true.tolist(), y_pred.tolist(), strict=True)
        if t != p
    )
    return [{"true": t, "predicted": p, "count": n} for (t, p), n in counts.most_common(k)]
