import csv
import json
import os

import pytest

from training import sources
from training.labels import LABELS

from .helpers import bitext_csv, shipped_model_dir


def _write_csv(path, records):
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["instruction", "intent", "category", "tags"])
        writer.writeheader()
        for text, intent in records:
            writer.writerow({"instruction": text, "intent": intent, "category": "X", "tags": "B"})


def test_bitext_mapping_accounts_for_every_intent_of_the_dataset():
    with bitext_csv().open(newline="") as fh:
        intents = {row["intent"] for row in csv.DictReader(fh)}
    assert len(intents) == 27
    assert intents == set(sources.BITEXT_MAPPING) | set(sources.BITEXT_DROPPED)
    assert not set(sources.BITEXT_MAPPING) & set(sources.BITEXT_DROPPED)
    assert set(sources.BITEXT_MAPPING.values()) <= set(LABELS)


def test_invoices_are_payment_issue():
    # docs/label-guide.md, rule 5: billing documents are a payment matter, not "other".
    assert sources.BITEXT_MAPPING["check_invoice"] == "payment_issue"
    assert sources.BITEXT_MAPPING["get_invoice"] == "payment_issue"


def test_bitext_sample_rows_per_label_after_the_mapping_and_the_cap():
    rows = sources.load_bitext_csv(sources.BITEXT_SAMPLE)
    counts = {label: sum(r["label"] == label for r in rows) for label in LABELS}
    assert counts == {
        "track_order": 385,
        "cancel_order": 139,
        "return_item": 0,
        "refund_request": 450,
        "product_inquiry": 0,
        "change_address": 279,
        "payment_issue": 450,
        "complaint": 156,
        "compliment": 0,
        "other": 450,
    }
    # The cap takes payment_issue round-robin over its three sub-intents.
    payment = {r["bitext_intent"] for r in rows if r["label"] == "payment_issue"}
    assert payment == {"payment_issue", "check_invoice", "get_invoice"}


def test_load_bitext_csv_maps_drops_and_fills_placeholders(tmp_path):
    path = tmp_path / "b.csv"
    _write_csv(
        path,
        [
            ("where is order {{Order Number}}", "track_order"),
            ("i want to leave a review", "review"),
            ("how soon can i expect my package", "delivery_period"),
        ],
    )
    rows = sources.load_bitext_csv(path)
    assert [(r["label"], r["bitext_intent"]) for r in rows] == [
        ("track_order", "track_order"),
        ("track_order", "delivery_period"),
    ]
    assert all("{{" not in r["message"] for r in rows)
    assert all(r["source"] == "bitext" for r in rows)


def test_load_bitext_caps_a_label_but_keeps_each_sub_intent(tmp_path):
    path = tmp_path / "b.csv"
    records = [(f"reset my password {i}", "recover_password") for i in range(600)]
    records += [(f"newsletter please {i}", "newsletter_subscription") for i in range(5)]
    _write_csv(path, records)
    rows = sources.load_bitext_csv(path)
    assert len(rows) == sources.BITEXT_CAP_PER_LABEL
    assert sum(r["bitext_intent"] == "newsletter_subscription" for r in rows) == 5


def test_resolve_bitext_rejects_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        sources.resolve_bitext(str(tmp_path / "absent.csv"))
    assert sources.resolve_bitext(None) is None
    assert sources.resolve_bitext("none") is None


def test_every_bitext_default_is_the_sample_in_the_repository():
    from training import evaluate, train
    from training.cli_args import parse_args
    from training.dataset import DataConfig

    sample = str(sources.BITEXT_SAMPLE)
    assert sources.resolve_bitext(sample) == sources.BITEXT_SAMPLE
    assert DataConfig().bitext == sample
    assert parse_args(train.TrainArgs, []).bitext == sample
    assert parse_args(evaluate.EvaluateArgs, ["--model", "m", "--split", "test"]).bitext == sample
    assert parse_args(train.TrainArgs, ["--bitext", "none"]).bitext == "none"


def test_the_shipped_model_was_trained_on_this_bitext_file():
    card = json.loads((shipped_model_dir() / "model_card.json").read_text())
    (source,) = [s for s in card["data"]["sources"] if s["name"] == "bitext-customer-support"]
    assert source["sha256"] == sources.sha256_file(sources.BITEXT_SAMPLE)


def test_hub_download_fails_cleanly_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(Exception) as info:
        sources.download_bitext_from_hub(cache_dir=tmp_path)
    assert "offline" in f"{type(info.value).__name__} {info.value}".lower()
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_read_jsonl_rejects_unknown_labels(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"message": "hi", "label": "greeting"}\n')
    with pytest.raises(ValueError, match="unknown label"):
        sources.read_jsonl(path)
