"""intent.model_store: LATEST, the versions, the model cards and the rules of ``models/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from intent import model_store
from intent.evaluation import set_field_set
from intent.model_store import promotion_verdict

REPO_MODELS = Path(__file__).resolve().parents[2] / "models"


def _card(version: str, macro_f1: float | None, sha256: str = "a" * 64) -> dict[str, Any]:
    card: dict[str, Any] = {"model_version": version, "metrics": {"test": {}}}
    if macro_f1 is not None:
        entry = {"data": "training/data/field_eval_v2.jsonl", "sha256": sha256}
        set_field_set(card, "field", entry | {"rows": 450, "macro_f1": macro_f1})
    return card


def _version(root: Path, card: dict[str, Any]) -> Path:
    model_dir = root / card["model_version"]
    model_dir.mkdir(parents=True)
    model_store.write_card(model_dir, card)
    return model_dir


# --- LATEST, the versions, the cards ------------------------------------------------------


def test_latest_is_written_and_read_back(tmp_path: Path) -> None:
    assert model_store.latest_version(tmp_path) is None
    model_store.set_latest(tmp_path, "v2")
    assert (tmp_path / "LATEST").read_text() == "v2\n"
    assert model_store.latest_version(tmp_path) == "v2"


def test_versions_are_the_directories_holding_a_card(tmp_path: Path) -> None:
    _version(tmp_path, _card("v2", None))
    _version(tmp_path, _card("v1", None))
    (tmp_path / "notes").mkdir()
    assert [p.name for p in model_store.list_versions(tmp_path)] == ["v1", "v2"]
    assert not model_store.has_card(tmp_path / "notes")


def test_a_card_is_written_as_indented_json_and_read_back(tmp_path: Path) -> None:
    card = _card("v1", 0.9)
    path = model_store.write_card(_version(tmp_path, _card("v1", None)), card)
    assert path == tmp_path / "v1" / "model_card.json"
    assert path.read_text() == json.dumps(card, indent=2)
    assert model_store.read_card(tmp_path / "v1") == card


def test_resolve_model_dir_follows_latest_and_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no model version given"):
        model_store.resolve_model_dir(tmp_path)
    _version(tmp_path, _card("v1", None))
    model_store.set_latest(tmp_path, "v1")
    assert model_store.resolve_model_dir(tmp_path) == tmp_path / "v1"
    with pytest.raises(FileNotFoundError, match="holds no model_card.json"):
        model_store.resolve_model_dir(tmp_path, "v9")


def test_the_card_of_a_served_version_is_found_by_directory_or_by_name(tmp_path: Path) -> None:
    _version(tmp_path, _card("v1", None))
    renamed = _card("v2", None)
    _version(tmp_path, renamed)
    (tmp_path / "v2").rename(tmp_path / "copy-of-v2")
    assert model_store.card_of_version(tmp_path, "v1") == _card("v1", None)
    assert model_store.card_of_version(tmp_path, "v2") == renamed
    assert model_store.card_of_version(tmp_path, "v3") is None


# --- the promotion gate -------------------------------------------------------------------


def test_promotion_refuses_a_lower_macro_f1() -> None:
    allowed, reason = promotion_verdict(_card("new", 0.9012), _card("old", 0.9290))
    assert not allowed
    assert "0.9012" in reason and "0.9290" in reason and "--force" in reason


@pytest.mark.parametrize("macro_f1", [0.9290, 0.95])
def test_promotion_allows_an_equal_or_higher_macro_f1(macro_f1: float) -> None:
    allowed, reason = promotion_verdict(_card("new", macro_f1), _card("old", 0.9290))
    assert allowed, reason


@pytest.mark.parametrize(
    ("candidate", "served", "unscored"),
    [(None, 0.93, ["new"]), (0.93, None, ["old"]), (None, None, ["new", "old"])],
)
def test_promotion_refuses_a_missing_field_set(
    candidate: float | None, served: float | None, unscored: list[str]
) -> None:
    allowed, reason = promotion_verdict(_card("new", candidate), _card("old", served))
    assert not allowed
    for version in unscored:
        assert f"switchyard model score {version} --data " in reason
    assert "--force" in reason


def test_promotion_refuses_field_sets_of_different_files() -> None:
    allowed, reason = promotion_verdict(
        _card("new", 0.99, sha256="b" * 64), _card("old", 0.90, sha256="c" * 64)
    )
    assert not allowed
    assert "switchyard model score new --data training/data/field_eval_v2.jsonl" in reason
    assert "--force" in reason


def test_promotion_allows_the_served_version_itself() -> None:
    assert promotion_verdict(_card("old", None), _card("old", None))[0]


# --- forced promotions and the keep-two rule ---------------------------------------------


REASON = "shipped over v1 on purpose: it meets the agreement target that v1 missed."


def test_a_version_scored_higher_on_the_same_file_breaks_the_rule(tmp_path: Path) -> None:
    _version(tmp_path, _card("v1", 0.95))
    _version(tmp_path, _card("v0", 0.99, sha256="b" * 64))  # another file: not compared
    problems = model_store.promotion_rule_violations(tmp_path, _card("v2", 0.94))
    assert len(problems) == 1 and "v1" in problems[0]
    assert model_store.promotion_rule_violations(tmp_path, _card("v2", 0.95)) == []


def test_a_forced_promotion_names_the_version_and_says_why(tmp_path: Path) -> None:
    _version(tmp_path, _card("v1", 0.95))
    forced = _card("v2", 0.94) | {"promotion": {"forced_over": ["v1"], "reason": REASON}}
    assert model_store.forced_promotion(forced) == (["v1"], REASON)
    assert model_store.promotion_rule_violations(tmp_path, forced) == []
    terse = forced | {"promotion": {"forced_over": ["v1"], "reason": "faster"}}
    assert model_store.promotion_rule_violations(tmp_path, terse)


def test_the_keep_two_rule() -> None:
    assert model_store.keep_rule_violation({"v2", "v1"}, "v2") is None
    assert model_store.keep_rule_violation({"v3", "v2", "v1"}, "v3")
    assert model_store.keep_rule_violation({"v1"}, "v2")


def test_the_shipped_models_keep_both_rules() -> None:
    latest = model_store.latest_version(REPO_MODELS)
    assert latest is not None
    versions = {p.name for p in model_store.list_versions(REPO_MODELS)}
    assert model_store.keep_rule_violation(versions, latest) is None
    card = model_store.read_card(REPO_MODELS / latest)
    assert model_store.promotion_rule_violations(REPO_MODELS, card) == []
