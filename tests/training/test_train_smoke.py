import json
import shutil

import numpy as np
import pytest

from intent.routed import RoutedModel
from intent.runner import IntentModel
from training import evaluate, train
from training.labels import LABELS
from training.sources import read_jsonl

from .helpers import ROOT, bitext_csv, one_model_dirs, shipped_model_dir

pytestmark = pytest.mark.slow


def _tiny_run(tmp_path, *extra: str):
    return train.main(
        [
            "--bitext", str(bitext_csv()), "--subset", "4", "--max-steps", "2",
            "--batch-size", "8", "--models-dir", str(tmp_path / "models"),
            "--runs-dir", str(tmp_path / "runs"), *extra,
        ]
    )  # fmt: skip


def test_tiny_training_run_produces_a_loadable_model_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("SWITCHYARD_VAR_DIR", str(tmp_path / "var"))  # the baseline cache
    models_dir = tmp_path / "models"
    model_dir = _tiny_run(tmp_path)

    assert (models_dir / "LATEST").read_text().strip() == model_dir.name
    assert model_dir.name.startswith("intent-minilm-")
    for name in (
        "model.onnx",
        "tokenizer.json",
        "labels.json",
        "calibration.json",
        "model_card.json",
    ):
        assert (model_dir / name).is_file(), name
    # The baseline stays out of models/ (11 MB a version): it is cached under var/ instead.
    assert not list(model_dir.rglob("*.joblib"))
    cached = list((tmp_path / "var" / "baselines").glob("*.joblib"))
    assert len(cached) == 1
    card = json.loads((model_dir / "model_card.json").read_text())
    assert card["model_version"] == model_dir.name
    assert {s["name"] for s in card["data"]["sources"]} == {
        "switchyard-corpus",
        "switchyard-written",
        "bitext-customer-support",
    }
    assert all(len(s["sha256"]) == 64 for s in card["data"]["sources"])
    assert set(card["metrics"]["test_by_source"]) == {"corpus", "written", "bitext"}
    assert card["temperature"] > 0
    assert card["input"]["emoji"] == "names"  # the default since v7
    assert card["quantization"].startswith("onnxruntime MatMulIntegerToFloat int8")  # channelwise
    assert 0.0 <= card["metrics"]["test"]["int8_fp32_top1_agreement"] <= 1.0

    model = IntentModel(model_dir)
    probs = model.predict_messages(
        ["where is my parcel", "yes the first option"],
        [None, [{"role": "agent", "text": "refund or replacement?"}]],
    )
    assert probs.shape == (2, len(LABELS))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)

    out = tmp_path / "eval"
    data_file = ROOT / "training" / "data" / "challenge.jsonl"
    result = evaluate.main(["--model", str(model_dir), "--data", str(data_file), "--out", str(out)])
    assert result["examples"] == len(read_jsonl(data_file))
    written = json.loads((out / "metrics.json").read_text())
    for model_name in ("transformer", "baseline"):
        assert set(written[model_name]["per_label"]) == set(LABELS)
        assert 0.0 <= written[model_name]["ece"] <= 1.0
    # Rebuilt from the card: the same rows as the run's (subset included), so the same entry.
    assert list((tmp_path / "var" / "baselines").glob("*.joblib")) == cached
    assert (out / "confusion_matrix.png").stat().st_size > 1000
    assert (out / "reliability_diagram.png").stat().st_size > 1000


def test_a_truncated_student_learns_from_the_shipped_model(tmp_path, monkeypatch):
    monkeypatch.setenv("SWITCHYARD_VAR_DIR", str(tmp_path / "var"))
    teacher = one_model_dirs(shipped_model_dir())[0]
    model_dir = _tiny_run(
        tmp_path, "--encoder-layers", "2", "--teacher", str(teacher), "--set-latest", "false",
        "--emoji-names", "false",
    )  # fmt: skip

    assert model_dir.name.startswith("intent-minilm-l2-")
    assert not (tmp_path / "models" / "LATEST").exists()
    card = json.loads((model_dir / "model_card.json").read_text())
    assert card["encoder_layers"] == 2
    assert card["teacher"] == teacher.name
    assert card["training"]["distill_weight"] == 0.5
    assert card["input"]["emoji"] == "unk"  # as models before v7 read them
    probs = IntentModel(model_dir).predict_messages(["where is my parcel"])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_a_teacher_trained_on_other_splits_is_refused(tmp_path):
    teacher = tmp_path / "teacher"
    teacher.mkdir()
    card = json.loads((shipped_model_dir() / "model_card.json").read_text())
    card["data"]["split_fingerprints"]["test"] = "0000000000000000"
    (teacher / "model_card.json").write_text(json.dumps(card))

    with pytest.raises(ValueError, match="other splits"):
        _tiny_run(tmp_path, "--teacher", str(teacher))
    assert not (tmp_path / "models").exists()


def test_init_seed_changes_the_start_and_keeps_the_splits(tmp_path, monkeypatch):
    # Two routes of a routed version must share their splits; --init-seed lets one of them try
    # another start without moving a row between train, validation and test.
    monkeypatch.setenv("SWITCHYARD_VAR_DIR", str(tmp_path / "var"))
    first = _tiny_run(tmp_path / "a", "--no-set-latest")
    second = _tiny_run(tmp_path / "b", "--no-set-latest", "--init-seed", "7")
    cards = [json.loads((d / "model_card.json").read_text()) for d in (first, second)]
    assert cards[0]["data"]["split_fingerprints"] == cards[1]["data"]["split_fingerprints"]
    assert cards[0]["data"]["seed"] == cards[1]["data"]["seed"] == 13
    assert (cards[0]["training"]["init_seed"], cards[1]["training"]["init_seed"]) == (None, 7)
    messages = ["where is my parcel", "I want my money back"]
    logits = [IntentModel(d).logits_for_messages(messages) for d in (first, second)]
    assert not np.allclose(logits[0], logits[1])


def test_a_routed_teacher_gives_each_row_its_routes_calibrated_logits(tmp_path):
    shipped = one_model_dirs(shipped_model_dir())[0]
    card = json.loads((shipped / "model_card.json").read_text())
    teacher = tmp_path / "routed"
    for route in ("english", "other"):
        shutil.copytree(shipped, teacher / route, ignore=shutil.ignore_patterns("eval"))
    routing = {"languages": ["en", "es"], "not_english_at": 0.95}
    routing["routes"] = {"english": "english", "other": "other"}
    (teacher / "model_card.json").write_text(
        json.dumps({"model_version": "routed", "routing": routing, "data": card["data"]})
    )
    rows = [
        {"message": "where is my parcel", "label": "track_order"},
        {"message": "¿dónde está mi pedido? no llega", "label": "track_order"},
    ]

    logits = train._teacher_logits(str(teacher), rows, card["data"])
    assert logits is not None

    expected = RoutedModel(teacher).logits_for_messages([r["message"] for r in rows])
    np.testing.assert_array_equal(logits, expected)
    alone = IntentModel(shipped)
    one = alone.logits_for_messages([r["message"] for r in rows])
    np.testing.assert_allclose(logits, one / np.float32(alone.info.temperature))
