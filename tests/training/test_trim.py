"""``python -m training.trim``: a version whose vocabulary is cut to the languages it serves."""

import json

import numpy as np
import pytest

from intent.encoding import load_tokenizer
from intent.evaluation import FIELD_SET_PATH, read_rows
from intent.model_store import read_card
from intent.runner import IntentModel
from training.labels import LABELS
from training.trim import TrimArgs, build, fp32_agreement
from training.vocabulary import changed_segmentation, model_inputs

from .helpers import one_model_dirs, shipped_model_dir

pytestmark = pytest.mark.slow


def _unigram_model():
    """The shipped model directory with a SentencePiece (Unigram) vocabulary."""
    model_dir = one_model_dirs(shipped_model_dir())[-1]  # a routed version's other route
    spec = json.loads((model_dir / "tokenizer.json").read_text())
    assert spec["model"]["type"] == "Unigram", model_dir
    return model_dir


def test_a_cut_version_answers_as_its_source_wherever_segmentation_held(tmp_path, monkeypatch):
    monkeypatch.setenv("SWITCHYARD_VAR_DIR", str(tmp_path / "var"))
    source = _unigram_model()
    model_dir = build(TrimArgs(model=str(source), top_words=3000, models_dir=str(tmp_path)))

    card = read_card(model_dir)
    cut = card["vocabulary"]
    assert cut["from"] == read_card(source)["model_version"] != card["model_version"]
    assert cut["pieces"] < cut["pieces_before"]
    assert (model_dir / "model.onnx").stat().st_size < (source / "model.onnx").stat().st_size
    assert not (tmp_path / "LATEST").exists()

    rows = read_rows(FIELD_SET_PATH, LABELS)
    inputs = model_inputs(rows, card["input"]["emoji"])
    kept = _kept_ids(source, model_dir)
    before, after = IntentModel(source), IntentModel(model_dir)
    tokenizers = load_tokenizer(source), load_tokenizer(model_dir)
    changed = set(changed_segmentation(*tokenizers, kept, inputs))
    assert len(changed) == cut["rows_segmented_otherwise"]["field_set"] < len(rows) / 2
    held = [i for i in range(len(rows)) if i not in changed]
    messages = [rows[i]["message"] for i in held]
    histories = [rows[i].get("conversation_history") for i in held]
    np.testing.assert_array_equal(
        after.logits_for_messages(messages, histories),
        before.logits_for_messages(messages, histories),
    )
    # Scored like a trained version: calibrated again, test split and field set in the card.
    assert (
        card["temperature"]
        == json.loads((model_dir / "calibration.json").read_text())["temperature"]
    )
    assert 0.5 < card["metrics"]["test"]["int8"]["macro_f1"] <= 1.0
    assert card["metrics"]["field_sets"]["field"]["rows"] == len(rows)
    # --fp32 cuts that graph alike: the source's int8 graph in its place agrees on every row.
    same = fp32_agreement(model_dir, source / "model.onnx", kept, cut["pieces_before"], rows[:40])
    assert same == 1.0


def _kept_ids(source, model_dir) -> list[int]:
    """The source ids of the cut vocabulary's pieces, in its order."""
    old = {piece: i for i, (piece, _) in enumerate(_vocab(source))}
    return [old[piece] for piece, _ in _vocab(model_dir)]


def _vocab(model_dir) -> list:
    return json.loads((model_dir / "tokenizer.json").read_text())["model"]["vocab"]
