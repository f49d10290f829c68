"""Rows that carry ``language`` or ``slice``, or a history, are scored per group as well."""

import json
from types import SimpleNamespace
from typing import cast

import numpy as np

from intent.evaluation import field_set_entry
from intent.runner import IntentModel
from training.evaluate import evaluate_rows, format_table, scores_by_group
from training.labels import LABEL_TO_ID, LABELS


class StubModel:
    """Predicts a fixed label per message (the rest of the probability spread evenly)."""

    info = SimpleNamespace(model_version="stub-1", temperature=1.0)

    def __init__(self, predictions: dict[str, str]):
        self.predictions = predictions

    def predict_rows(self, rows):
        probs = np.full((len(rows), len(LABELS)), 0.02)
        for i, row in enumerate(rows):
            probs[i, LABEL_TO_ID[self.predictions[row["message"]]]] = 0.82
        return probs


def _stub(predictions: dict[str, str]) -> IntentModel:
    """The stub where evaluate takes a model: it uses only ``info`` and ``predict_rows``."""
    return cast(IntentModel, StubModel(predictions))


ROWS = [
    {"message": "wo ist mein Paket", "label": "track_order", "language": "de"},
    {"message": "Bestellung stornieren", "label": "cancel_order", "language": "de"},
    {"message": "¿dónde está mi pedido?", "label": "track_order", "language": "es"},
    {"message": "cancelar pedido", "label": "cancel_order", "language": "es"},
    {"message": "where parcel", "label": "track_order", "language": "en", "slice": "short"},
    {"message": "cancel pls", "label": "cancel_order", "language": "en", "slice": "sms"},
]
PREDICTIONS = {
    "wo ist mein Paket": "track_order",
    "Bestellung stornieren": "cancel_order",
    "¿dónde está mi pedido?": "track_order",
    "cancelar pedido": "track_order",  # the one error: es, no slice
    "where parcel": "track_order",
    "cancel pls": "cancel_order",
}


def _arrays(rows):
    y_true = np.array([LABEL_TO_ID[r["label"]] for r in rows])
    y_pred = np.array([LABEL_TO_ID[PREDICTIONS[r["message"]]] for r in rows])
    return y_true, y_pred


def test_scores_by_group_per_language_and_slice():
    groups = scores_by_group(ROWS, *_arrays(ROWS))
    assert set(groups) == {"by_language", "by_slice"}
    by_language = groups["by_language"]
    assert list(by_language) == ["de", "en", "es"]
    assert by_language["de"] == {"rows": 2, "accuracy": 1.0, "macro_f1": 1.0}
    assert by_language["es"]["rows"] == 2
    assert by_language["es"]["accuracy"] == 0.5
    # track_order: P 1/2, R 1, F1 2/3; cancel_order: F1 0; averaged over the two present.
    assert abs(by_language["es"]["macro_f1"] - 1 / 3) < 1e-9
    # Rows without a slice are in no slice.
    assert groups["by_slice"] == {
        "short": {"rows": 1, "accuracy": 1.0, "macro_f1": 1.0},
        "sms": {"rows": 1, "accuracy": 1.0, "macro_f1": 1.0},
    }


def test_rows_without_the_keys_have_no_groups():
    rows = [{k: v for k, v in r.items() if k in ("message", "label")} for r in ROWS]
    assert scores_by_group(rows, *_arrays(rows)) == {}


def test_evaluate_rows_reports_groups_in_json_and_table(tmp_path):
    result = evaluate_rows(
        tmp_path / "no-model",
        ROWS,
        tmp_path,
        name="tiny",
        with_baseline=False,
        model=_stub(PREDICTIONS),
    )
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written["transformer"]["by_language"]["es"]["accuracy"] == 0.5
    assert written["transformer"]["by_slice"]["sms"]["rows"] == 1
    table = format_table(result)
    assert "by_language" in table and "by_slice" in table
    assert any(line.split()[:2] == ["es", "0.500/0.333"] for line in table.splitlines())


def test_the_table_is_unchanged_for_rows_without_groups(tmp_path):
    rows = [{k: v for k, v in r.items() if k in ("message", "label")} for r in ROWS]
    result = evaluate_rows(
        tmp_path / "no-model",
        rows,
        tmp_path,
        name="tiny",
        with_baseline=False,
        model=_stub(PREDICTIONS),
    )
    assert "by_language" not in result["transformer"]
    table = format_table(result)
    assert "by_" not in table
    assert table.splitlines()[-1].startswith("ece")


def test_conversations_and_single_messages_are_scored_apart():
    history = [{"role": "agent", "text": "How can I help?"}]
    rows = [dict(r, conversation_history=history if r["language"] == "es" else []) for r in ROWS]
    groups = scores_by_group(rows, *_arrays(rows))
    assert groups["by_turns"]["multi_turn"] == {"rows": 2, "accuracy": 0.5, "macro_f1": 1 / 3}
    assert groups["by_turns"]["single"]["accuracy"] == 1.0


def test_a_field_set_entry_in_a_card_carries_the_groups(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    probs = StubModel(PREDICTIONS).predict_rows(ROWS)
    entry = field_set_entry(path, probs, ROWS, LABELS)
    assert entry["rows"] == 6
    assert entry["by_language"]["es"]["accuracy"] == 0.5
    assert set(entry["by_slice"]) == {"short", "sms"}
    assert "by_turns" not in entry  # no conversations: nothing to split
