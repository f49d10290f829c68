"""The model wrapper on the shipped model directory: calibrated probabilities, inputs, limits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from intent.probabilities import softmax
from intent.runner import IntentModel, plan_runs
from intent.text_format import EMOJI_AS_UNK, format_input


@pytest.fixture(scope="module")
def model(shipped_one_model_dir: Path) -> IntentModel:
    return IntentModel(shipped_one_model_dir, intra_op_threads=1, inter_op_threads=1)


def test_predict_gives_calibrated_probabilities_over_the_labels(
    model: IntentModel, shipped_one_model_dir: Path
) -> None:
    pairs = [format_input("where is my parcel"), format_input("thanks, great service!")]
    probabilities = model.predict(pairs)
    labels = json.loads((shipped_one_model_dir / "labels.json").read_text())
    assert model.info.labels == tuple(labels) and len(labels) == 10
    assert probabilities.shape == (2, 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    calibration = json.loads((shipped_one_model_dir / "calibration.json").read_text())
    temperature = calibration["temperature"]
    np.testing.assert_allclose(
        probabilities, softmax(model.logits(pairs) / temperature), rtol=1e-5, atol=1e-6
    )


def test_predict_reports_the_model_card_version(
    model: IntentModel, shipped_one_model_dir: Path
) -> None:
    card = json.loads((shipped_one_model_dir / "model_card.json").read_text())
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


def test_plan_runs_keeps_one_long_entry_from_padding_the_rest() -> None:
    lengths = [12, 11, 128, 12, 10, 11, 12, 11]
    runs = plan_runs(lengths, overhead_tokens=12)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    assert [2] in runs  # the long one runs alone
    # Similar lengths share one run: a second run would cost more than the padding it saves.
    assert plan_runs([10, 11, 12, 13], overhead_tokens=12) == [[0, 1, 2, 3]]
    assert plan_runs([], overhead_tokens=12) == []


def test_plan_runs_pads_no_more_than_a_single_run() -> None:
    lengths = [5, 40, 7, 41, 6, 90, 8, 39, 91, 5]
    overhead = 12
    runs = plan_runs(lengths, overhead_tokens=overhead)
    cost = sum(overhead + len(run) * max(lengths[i] for i in run) for run in runs)
    assert cost <= overhead + len(lengths) * max(lengths)
    assert len(runs) == 3  # ~6, ~40 and ~90 tokens


def test_grouped_runs_answer_like_one_run_per_message(model: IntentModel) -> None:
    history = [{"role": "customer", "text": "I ordered a jacket last week " * 8}]
    pairs = [format_input("where is my parcel"), format_input("yes please", history)] + [
        format_input(text)
        for text in ("cancel my order", "thanks, great service!", "my card was declined")
    ]
    one_by_one = np.concatenate([model.logits([pair]) for pair in pairs])
    together = model.logits(pairs)
    assert together.shape == (len(pairs), 10)
    # Same order, same winners (int8 activations are quantized per run, so not bit-equal).
    assert (together.argmax(axis=1) == one_by_one.argmax(axis=1)).all()
    np.testing.assert_allclose(together, one_by_one, atol=1.0)


def test_encode_spells_emoji_out_as_the_model_card_says(
    model: IntentModel, shipped_one_model_dir: Path
) -> None:
    card = json.loads((shipped_one_model_dir / "model_card.json").read_text())
    style = card["input"].get("emoji", EMOJI_AS_UNK)
    assert model.info.emoji_style == style
    ids = model.encode([format_input("⭐⭐⭐⭐⭐ 👍")])["input_ids"][0].tolist()
    unknown = json.loads((shipped_one_model_dir / "tokenizer.json").read_text())["model"]["vocab"][
        "[UNK]"
    ]
    assert (unknown in ids) == (style == EMOJI_AS_UNK)
