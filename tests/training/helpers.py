"""Shared fixtures data for the training tests."""

from __future__ import annotations

from pathlib import Path

from intent.model_store import read_card
from intent.routed import is_routed, route_dirs
from training.sources import BITEXT_SAMPLE

ROOT = Path(__file__).resolve().parents[2]


def bitext_csv() -> Path:
    """The Bitext sample kept in the repository (the default of every ``--bitext``)."""
    return BITEXT_SAMPLE


def shipped_model_dir() -> Path:
    """The model directory ``models/LATEST`` names (the one the service loads by default)."""
    models = ROOT / "models"
    return models / (models / "LATEST").read_text().strip()


def one_model_dirs(model_dir: Path) -> list[Path]:
    """The directories holding one ONNX model each: ``model_dir``, or a routed version's two
    routes (English first)."""
    if is_routed(read_card(model_dir)):
        return list(route_dirs(model_dir).values())
    return [model_dir]
