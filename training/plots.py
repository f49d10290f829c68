"""Confusion-matrix and reliability-diagram PNGs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from training.labels import LABELS


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def plot_confusion_matrix(
    matrix: list[list[int]], path: Path, title: str = "Confusion matrix"
) -> Path:
    """Row = true label, column = predicted label, with counts in each cell."""
    plt = _pyplot()
    m = np.asarray(matrix)
    fig, ax = plt.subplots(figsize=(8, 7))
    norm = m / np.clip(m.sum(axis=1, keepdims=True), 1, None)
    ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(LABELS)), LABELS, rotation=45, ha="right")
    ax.set_yticks(range(len(LABELS)), LABELS)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j]:
                ax.text(
                    j,
                    i,
                    str(m[i, j]),
                    ha="center",
                    va="center",
                    color="white" if norm[i, j] > 0.5 else "black",
                    fontsize=8,
                )
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_reliability(bins: list[dict], path: Path, ece: float, title: str = "Reliability") -> Path:
    """Accuracy per confidence bin against the diagonal of perfect calibration."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 5))
    width = bins[0]["hi"] - bins[0]["lo"]
    centers = [b["lo"] + width / 2 for b in bins]
    acc = [b["accuracy"] or 0.0 for b in bins]
    conf = [b["confidence"] or 0.0 for b in bins]
    ax.bar(centers, acc, width=width * 0.95, alpha=0.8, label="accuracy", edgecolor="black")
    ax.bar(
        centers,
        np.array(conf) - np.array(acc),
        bottom=acc,
        width=width * 0.95,
        alpha=0.3,
        color="red",
        label="gap to confidence",
    )
    ax.plot([0, 1], [0, 1], "k--", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.set_title(f"{title} (ECE {ece:.3f})")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
