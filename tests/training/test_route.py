"""``python -m training.route``: two model directories become one routed version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from intent.model_store import latest_version, read_card, write_card
from intent.routed import RoutedModel, open_model
from training.route import RouteArgs, build, route_shares, same_data

from .helpers import ROOT

pytestmark = pytest.mark.slow


def _two_versions() -> tuple[Path, Path]:
    """Two model directories trained on the same data: the shipped version's routes, or the
    shipped version twice (the pair's plumbing is what these tests check)."""
    latest = ROOT / "models" / str(latest_version(ROOT / "models"))
    if "routing" in read_card(latest):
        return latest / "english", latest / "other"
    return latest, latest


def test_a_routed_version_scores_the_pair_as_served_on_one_test_split(tmp_path):
    english, other = _two_versions()
    routed_dir = build(RouteArgs(english=str(english), other=str(other), models_dir=str(tmp_path)))
    card = read_card(routed_dir)
    routing = card["routing"]
    assert routing["route_versions"] == {
        "english": read_card(english)["model_version"],
        "other": read_card(other)["model_version"],
    }
    assert (routed_dir / "english" / "model.onnx").is_file()
    # Each route calibrated again on the validation rows the check sends to it.
    calibration = routing["calibration"]
    assert (
        calibration["english"]["rows"] + calibration["other"]["rows"]
        == (card["data"]["split_sizes"]["validation"])
    )
    for route in ("english", "other"):
        written = json.loads((routed_dir / route / "calibration.json").read_text())
        assert written["temperature"] == calibration[route]["temperature"] > 0
        assert route in written["fitted_on"]
    assert isinstance(open_model(routed_dir), RoutedModel)
    test = card["metrics"]["test"]["int8"]
    assert 0.5 < test["macro_f1"] <= 1.0
    # Every row of the test split went one way or the other, and English rows mostly English.
    taken = card["metrics"]["routes_taken"]["test"]
    assert sum(entry["rows"] for entry in taken.values()) == card["data"]["split_sizes"]["test"]
    assert taken["en"]["english_route"] >= 0.9 * taken["en"]["rows"]
    assert card["metrics"]["field_sets"]["field"]["macro_f1"] > 0.5
    # The card carries each route's int8/fp32 agreement and its calibration.
    agreement = card["metrics"]["int8_fp32_top1_agreement"]
    assert agreement == {
        "english": read_card(english)["metrics"]["test"]["int8_fp32_top1_agreement"],
        "other": read_card(other)["metrics"]["test"]["int8_fp32_top1_agreement"],
    }
    assert card["metrics"]["calibration"] == calibration
    assert not (tmp_path / "LATEST").exists()


def test_routes_trained_on_different_data_are_refused(tmp_path):
    english, other = _two_versions()
    changed = shutil.copytree(other, tmp_path / "changed")
    card = read_card(changed)
    card["data"]["seed"] = card["data"]["seed"] + 1
    write_card(changed, card)
    assert same_data(read_card(english), card) == ["data.seed"]
    with pytest.raises(SystemExit, match="different data"):
        build(RouteArgs(english=str(english), other=str(changed), models_dir=str(tmp_path)))


def test_route_shares_count_each_language_apart(tmp_path):
    english, other = _two_versions()
    routed_dir = tmp_path / "routed"
    shutil.copytree(english, routed_dir / "english")
    shutil.copytree(other, routed_dir / "other")
    routing = {"languages": ["en", "es"], "not_english_at": 0.95}
    routing["routes"] = {"english": "english", "other": "other"}
    (routed_dir / "model_card.json").write_text(json.dumps({"routing": routing}))
    rows = [
        {"message": "where is my order", "label": "track_order"},
        {"message": "¿dónde está mi pedido? no llega", "label": "track_order", "language": "es"},
    ]
    shares = route_shares(RoutedModel(routed_dir), rows)
    assert shares == {
        "en": {"rows": 1, "english_route": 1},
        "es": {"rows": 1, "english_route": 0},
    }
