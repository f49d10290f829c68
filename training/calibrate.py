"""Temperature scaling: one scalar T fitted on validation logits to minimise the NLL."""

from __future__ import annotations

import numpy as np

from intent.probabilities import softmax


def negative_log_likelihood(logits: np.ndarray, y_true: np.ndarray, temperature: float) -> float:
    """Mean NLL of the true labels under ``softmax(logits / T)``."""
    probs = softmax(logits, temperature)
    return float(-np.log(np.clip(probs[np.arange(len(y_true)), y_true], 1e-12, None)).mean())


def fit_temperature(logits: np.ndarray, y_true: np.ndarray) -> float:
    """Grid search over log T, then a finer grid around the best point (robust, no optimiser)."""
    grid = np.exp(np.linspace(np.log(0.05), np.log(20.0), 241))
    losses = [negative_log_likelihood(logits, y_true, t) for t in grid]
    best = int(np.argmin(losses))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    fine = np.linspace(lo, hi, 201)
    losses = [negative_log_likelihood(logits, y_true, t) for t in fine]
    return float(fine[int(np.argmin(losses))])
