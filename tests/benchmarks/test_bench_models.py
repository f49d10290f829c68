"""The inference bench opens every kind of model directory in models/, routed ones included."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.bench_inference import english_dir

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_each_version_in_models_has_an_english_directory_with_labels():
    versions = [card.parent for card in MODELS.glob("*/model_card.json")]
    assert versions
    for version in versions:
        card = json.loads((version / "model_card.json").read_text())
        found = english_dir(version)
        if "routing" in card:
            assert found == version / "english"
        else:
            assert found == version
        assert json.loads((found / "labels.json").read_text()) == card["labels"]


def test_the_int8_kernel_bench_runs_each_version_as_served():
    from benchmarks.bench_int8_kernels import load_both
    from intent.routed import RoutedModel

    pairs = [("where is my parcel", None), ("¿dónde está mi pedido?", None)]
    for version in [card.parent for card in MODELS.glob("*/model_card.json")]:
        routed = "routing" in json.loads((version / "model_card.json").read_text())
        models = load_both(version)
        assert len(models) == 2
        for model in models.values():
            assert isinstance(model, RoutedModel) == routed
            assert model.predict(pairs).shape == (2, len(model.info.labels))
