"""The model wrapper on the shipped model directory: calibrated probabilities, inputs, limits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from serving.model import IntentModel, softmax
from training.text_format import format_input


@pytest.fixture(scope="module")
def model(shipped_model_dir: Path) -> IntentModel:
    return IntentModel(shipped_model_dir, intra_op_threads=1, inter_op_threads=1)


def test_predict_gives_calibrated_probabilities_over_the_labels(
    model: IntentModel, shipped_model_dir: Path
) -> None:
    pairs = [format_input("where is my parcel"), format_input("thanks, great service!")]
    probabilities = model.predict(pairs)
    labels = json.loads((shipped_model_dir / "labels.json").read_text())
    assert model.info.labels == tuple(labels) and len(labels) == 10
    assert probabilities.shape == (2, 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    temperature = json.loads((shipped_model_dir / "calibration.json").read_text())["temperature"]
    np.testing.assert_allclose(
        probabilities, softmax(model.logits(pairs) / temperature), rtol=1e-5, atol=1e-6
    )


def test_predict_reports_the_model_card_version(
    model: IntentModel, shipped_model_dir: Path
) -> None:
    card = json.loads((shipped_model_dir / "model_card.json").read_text())
    assert model.info.model_version == card["model_version"]


def test_encode_puts_history_in_the_second_segment(model: IntentModel) -> None:
    history = [{"role": "customer", "text": "I bought shoes"}, {"role": "agent", "text": "ok"}]
    feeds = model.encode(
        [format_input("they are too small"), format_input("they are too small", history)]
    )
    assert feeds["input_ids"].shape[0] == 2
    assert feeds["token_type_ids"][0].max() == 0
    assert feeds["token_type_ids"][1].max() == 1


def test_encode_truncates_long_inputs_to_max_length(model: IntentModel) -> None:
    history = [{"role": "customer", "text": "word " * 400}] * 50
    feeds = model.encode([format_input("word " * 400, history)])
    assert feeds["input_ids"].shape == (1, model.info.max_length)


def test_predict_of_nothing_is_empty(model: IntentModel) -> None:
    assert model.predict([]).shape == (0, 10)
