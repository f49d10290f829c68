"""Shared fixtures data for the training tests."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bitext_csv() -> Path:
    """The Bitext sample CSV used in development and CI (``SWITCHYARD_BITEXT`` overrides)."""
    default = ROOT.parent / "shared" / "data" / "bitext" / "bitext_customer_support_train.csv"
    return Path(os.environ.get("SWITCHYARD_BITEXT", default))


def shipped_model_dir() -> Path:
    """The model directory ``models/LATEST`` names (the one the service loads by default)."""
    models = ROOT / "models"
    return models / (models / "LATEST").read_text().strip()
