"""The classifier wraps the bundled encoder, any local DistilBERT-style encoder, or a Hub id."""

import shutil
from pathlib import Path

import pytest
import torch

from intent.encoding import load_tokenizer
from training import modeling
from training.labels import LABELS


def _bundled() -> str:
    return modeling.resolve_base_model(modeling.DEFAULT_BASE_MODEL)


def test_encoder_layers_keeps_the_bottom_layers_with_their_pretrained_weights():
    full = modeling.build_classifier(_bundled())
    short = modeling.build_classifier(_bundled(), encoder_layers=2)

    assert len(full.encoder.encoder.layer) == 6
    assert len(short.encoder.encoder.layer) == 2
    assert short.encoder.config.num_hidden_layers == 2
    for index in (0, 1):
        kept = short.encoder.encoder.layer[index].state_dict()
        original = full.encoder.encoder.layer[index].state_dict()
        assert kept.keys() == original.keys()
        assert all(torch.equal(kept[name], original[name]) for name in kept)


def _tiny_distilbert(tmp_path: Path, layers: int) -> Path:
    """A tiny randomly initialised DistilBERT saved like a Hub download (no network here)."""
    from transformers import DistilBertConfig, DistilBertModel

    source = tmp_path / "distilbert-tiny"
    config = DistilBertConfig(vocab_size=30522, dim=32, hidden_dim=64, n_layers=layers, n_heads=2)
    DistilBertModel(config).save_pretrained(source)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy2(Path(_bundled()) / name, source / name)
    return source


def test_a_local_distilbert_encoder_trains_and_can_be_truncated(tmp_path):
    source = _tiny_distilbert(tmp_path, layers=3)

    model = modeling.load_model(str(source), tmp_path / "tokenizer", encoder_layers=2)

    assert model.encoder.config.n_layers == 2
    assert not model.uses_token_types  # DistilBERT takes no token types
    tokenizer = load_tokenizer(tmp_path / "tokenizer")
    rows = [
        {"message": "where is my parcel", "label": "track_order"},
        {"message": "cancel it please", "label": "cancel_order"},
    ]
    fit = modeling.train_model(
        model,
        tokenizer,
        rows,
        epochs=1,
        batch_size=2,
        learning_rate=1e-4,
        head_learning_rate=1e-3,
        weight_decay=0.0,
        warmup_ratio=0.0,
        seed=1,
        max_steps=1,
    )
    assert fit["steps"] == 1
    logits = modeling.predict_logits(model, tokenizer, rows)
    assert logits.shape == (2, len(LABELS))


def test_a_hub_id_is_passed_through_and_fails_cleanly_offline(monkeypatch, tmp_path):
    import huggingface_hub.constants as constants

    assert modeling.resolve_base_model("distilbert-base-uncased") == "distilbert-base-uncased"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(OSError, match="'distilbert-base-uncased'.*local directory"):
        modeling.load_model("distilbert-base-uncased", tmp_path / "tokenizer")


def test_distillation_term_is_zero_when_the_student_matches_the_teacher():
    teacher = torch.tensor([[2.0, 0.5, -1.0], [0.0, 3.0, 1.0]])
    same = modeling._distillation_loss(teacher.clone(), teacher, temperature=2.0)
    apart = modeling._distillation_loss(teacher.flip(-1), teacher, temperature=2.0)

    assert float(same) == pytest.approx(0.0, abs=1e-6)
    assert float(apart) > 0.1


def test_frozen_word_embeddings_stay_as_pretrained_while_the_rest_learns(tmp_path):
    source = _tiny_distilbert(tmp_path, layers=1)
    model = modeling.load_model(str(source), tmp_path / "tokenizer")
    tokenizer = load_tokenizer(tmp_path / "tokenizer")
    embeddings = model.encoder.get_input_embeddings().weight.detach().clone()
    layer = model.encoder.transformer.layer[0].ffn.lin1.weight.detach().clone()
    rows = [
        {"message": "where is my parcel", "label": "track_order"},
        {"message": "cancel it please", "label": "cancel_order"},
    ]

    modeling.train_model(
        model,
        tokenizer,
        rows,
        epochs=1,
        batch_size=2,
        learning_rate=1e-3,
        head_learning_rate=1e-3,
        weight_decay=0.0,
        warmup_ratio=0.0,
        seed=1,
        max_steps=2,
        freeze_word_embeddings=True,
    )

    assert torch.equal(model.encoder.get_input_embeddings().weight, embeddings)
    assert not torch.equal(model.encoder.transformer.layer[0].ffn.lin1.weight, layer)
