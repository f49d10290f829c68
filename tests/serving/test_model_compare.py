"""`switchyard model compare` / `score` and the promotion gate of `model use`.

The candidate is the shipped model with two label names swapped in its labels.json
(track_order <-> cancel_order), so which rows change, and how, is known in advance: the
shipped model answers every row below right, with confidence above 0.99.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.settings import get_settings
from intent.evaluation import set_field_set
from serving.cli import app as model_cli

CANDIDATE = "intent-candidate"
LONG_TRACK = (
    "Hello, I ordered a pair of running shoes two weeks ago and the tracking page still says "
    "label created. Could you please check where the parcel is and when it will arrive?"
)
HISTORY = [
    {"role": "customer", "text": "hi"},
    {"role": "agent", "text": "Hi! How can I help?"},
]
ROWS: list[dict[str, Any]] = [
    # track_order / cancel_order rows answered right today: the candidate breaks them.
    {"message": "where is my parcel? it has not arrived yet", "label": "track_order"},
    {"message": "can you tell me when my order will be delivered", "label": "track_order"},
    {
        "message": "what's the tracking number for my package",
        "conversation_history": HISTORY,
        "label": "track_order",
    },
    {"message": LONG_TRACK, "label": "track_order"},
    {"message": "please cancel my order, I don't want it anymore", "label": "cancel_order"},
    # A tracking question labelled cancel_order: wrong today, "fixed" by the swap.
    {"message": "has my package shipped yet", "label": "cancel_order"},
    # Labelled return_item: wrong today and wrong after, with another answer.
    {"message": "I want to cancel the order I placed yesterday", "label": "return_item"},
    # Untouched by the swap.
    {"message": "I want my money back for the broken kettle", "label": "refund_request"},
    {"message": "please refund me, the item never worked", "label": "refund_request"},
    {"message": "thank you so much, your support team was amazing", "label": "compliment"},
    {"message": "great service, the delivery was super fast, thanks!", "label": "compliment"},
    {"message": "I moved, please send my order to my new address", "label": "change_address"},
    {"message": "I need to change the shipping address on my order", "label": "change_address"},
    {"message": "my card was declined at checkout", "label": "payment_issue"},
    {"message": "I was charged twice for the same order", "label": "payment_issue"},
]
EXPECTED_COUNTS = {"changed": 7, "broken": 5, "fixed": 1, "still_wrong": 1}

runner = CliRunner()


def _version_copy(source: Path, target: Path, version: str) -> Path:
    """``source`` under another version name: big files linked, the JSON files copied."""
    target.mkdir()
    for path in source.iterdir():
        if path.is_file():
            if path.suffix == ".json":
                (target / path.name).write_bytes(path.read_bytes())
            else:
                (target / path.name).symlink_to(path)
    card = json.loads((target / "model_card.json").read_text())
    card["model_version"] = version
    (target / "model_card.json").write_text(json.dumps(card, indent=2))
    return target


@pytest.fixture
def compare_root(tmp_path: Path, shipped_model_dir: Path, shipped_one_model_dir: Path) -> Path:
    """The shipped version (LATEST, its own card copy; a routed version's English route) and
    the label-swapped candidate."""
    root = tmp_path / "models"
    root.mkdir()
    shipped = shipped_model_dir.name
    _version_copy(shipped_one_model_dir, root / shipped, shipped)
    candidate = _version_copy(shipped_one_model_dir, root / CANDIDATE, CANDIDATE)
    labels = json.loads((candidate / "labels.json").read_text())
    i, j = labels.index("track_order"), labels.index("cancel_order")
    labels[i], labels[j] = labels[j], labels[i]
    (candidate / "labels.json").write_text(json.dumps(labels))
    (root / "LATEST").write_text(shipped + "\n")
    return root


@pytest.fixture
def cli_env(compare_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Settings pointed at the test models directory for the CLI; yields that directory."""
    monkeypatch.setenv("SWITCHYARD_MODELS_ROOT", str(compare_root))
    get_settings.cache_clear()
    yield compare_root
    get_settings.cache_clear()


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "field.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return path


def _compare_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(model_cli, ["compare", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_compare_prints_both_versions_and_the_changed_rows(
    cli_env: Path, data_file: Path, shipped_model_dir: Path
) -> None:
    result = runner.invoke(model_cli, ["compare", CANDIDATE, "--data", str(data_file)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert shipped_model_dir.name in out and CANDIDATE in out
    numbers = _compare_json(CANDIDATE, "--data", str(data_file))
    for side in ("current", "candidate"):
        for key in ("accuracy", "macro_f1", "ece"):
            assert f"{numbers[side][key]:.4f}" in out
        assert f"{numbers[side]['per_label_f1']['track_order']:.4f}" in out
    assert "macro-F1" in out and "ECE" in out and "F1 track_order" in out and "F1 other" not in out
    # Changed rows: marked, worst first, long messages cut, history turns shown.
    assert out.index("broken") < out.index("still wrong") < out.index("fixed")
    assert "track_order → cancel_order" in out and "cancel_order → track_order" in out
    assert LONG_TRACK not in out and LONG_TRACK[:60] in out
    tracking_line = next(line for line in out.splitlines() if "tracking number" in line)
    assert " 2 " in tracking_line
    assert "fixed 1, broken 5, still wrong 1 (7 of 15 rows changed)" in out
    assert "kettle" not in out  # unchanged rows are not listed


def test_compare_json_counts_match_the_changed_rows(
    cli_env: Path, data_file: Path, shipped_model_dir: Path
) -> None:
    result = _compare_json(CANDIDATE, "--data", str(data_file))
    assert result["current"]["version"] == shipped_model_dir.name
    assert result["candidate"]["version"] == CANDIDATE
    assert result["rows"] == len(ROWS)
    assert result["sha256"] == hashlib.sha256(data_file.read_bytes()).hexdigest()
    assert result["counts"] == EXPECTED_COUNTS
    changes = [c["change"] for c in result["changed"]]
    assert len(changes) == EXPECTED_COUNTS["changed"]
    assert changes == sorted(changes, key=["broken", "still_wrong", "fixed"].index)
    fixed = next(c for c in result["changed"] if c["change"] == "fixed")
    assert fixed == {
        "row": 5,
        "message": "has my package shipped yet",
        "history_turns": 0,
        "label": "cancel_order",
        "current": "track_order",
        "candidate": "cancel_order",
        "change": "fixed",
    }
    assert result["current"]["accuracy"] == pytest.approx(13 / 15)
    assert result["candidate"]["accuracy"] == pytest.approx(9 / 15)
    for key in ("accuracy", "macro_f1", "ece"):
        difference = result["candidate"][key] - result["current"][key]
        assert result["difference"][key] == pytest.approx(difference)


def test_compare_against_a_path_to_a_model_directory(cli_env: Path, data_file: Path) -> None:
    result = _compare_json(
        CANDIDATE, "--against", str(cli_env / CANDIDATE), "--data", str(data_file)
    )
    assert result["counts"]["changed"] == 0
    assert result["candidate"]["macro_f1"] == result["current"]["macro_f1"]


def test_compare_unknown_version_exits_2(cli_env: Path, data_file: Path) -> None:
    result = runner.invoke(model_cli, ["compare", "no-such-version", "--data", str(data_file)])
    assert result.exit_code == 2
    assert "no-such-version" in result.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "No such file"), ('{"message": "hi"', "not a JSON object"), ("", "no rows")],
)
def test_compare_unreadable_data_exits_2(
    cli_env: Path, tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "data.jsonl"
    if content is not None:
        path.write_text(content)
    result = runner.invoke(model_cli, ["compare", CANDIDATE, "--data", str(path)])
    assert result.exit_code == 2
    assert expected in result.output and str(path) in result.output


def test_score_writes_the_field_set_into_the_card(cli_env: Path, data_file: Path) -> None:
    compared = _compare_json(CANDIDATE, "--data", str(data_file))
    result = runner.invoke(model_cli, ["score", CANDIDATE, "--data", str(data_file)])
    assert result.exit_code == 0, result.output
    card = json.loads((cli_env / CANDIDATE / "model_card.json").read_text())
    entry = card["metrics"]["field_sets"]["field"]
    assert entry["sha256"] == hashlib.sha256(data_file.read_bytes()).hexdigest()
    assert entry["data"] == str(data_file.resolve())  # outside the repository: absolute
    assert entry["rows"] == len(ROWS)
    for key in ("accuracy", "macro_f1", "ece", "per_label_f1"):
        assert entry[key] == compared["candidate"][key]
    assert entry["scored_at"]
    assert card["metrics"]["test"]  # the rest of the card is kept


def test_score_with_a_name_keeps_other_entries(cli_env: Path, data_file: Path) -> None:
    for name in ("field", "other"):
        result = runner.invoke(
            model_cli, ["score", CANDIDATE, "--data", str(data_file), "--name", name]
        )
        assert result.exit_code == 0, result.output
    card = json.loads((cli_env / CANDIDATE / "model_card.json").read_text())
    assert set(card["metrics"]["field_sets"]) == {"field", "other"}


def test_score_unknown_label_exits_2(cli_env: Path, tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"message": "hi", "label": "greeting"}\n')
    result = runner.invoke(model_cli, ["score", CANDIDATE, "--data", str(path)])
    assert result.exit_code == 2
    assert "greeting" in result.output


# --- the promotion gate of `model use` (the rule itself: tests/intent/test_model_store.py) --


class _FakeServe:
    """What `model use` calls on Ray, recorded; the served version is ``served``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, served: str) -> None:
        self.served = served
        self.deployed: list[str | None] = []
        monkeypatch.setattr("serving.ray_connect.connect_ray", lambda address: None)
        monkeypatch.setattr("serving.rollout.wait_until_serving", self.wait_until_serving)
        monkeypatch.setattr("serving.rollout.deploy", self.deploy)

    def wait_until_serving(self, model_version: str | None, **kwargs: Any) -> str:
        return self.served

    def deploy(self, config: dict[str, Any], **kwargs: Any) -> str:
        from serving.rollout import served_model_version

        self.deployed.append(served_model_version(config))
        return str(self.deployed[-1])


def _score_card(compare_root: Path, version: str, macro_f1: float) -> None:
    path = compare_root / version / "model_card.json"
    card = json.loads(path.read_text())
    set_field_set(card, "field", {"data": "f.jsonl", "sha256": "a" * 64, "macro_f1": macro_f1})
    path.write_text(json.dumps(card))


@pytest.fixture
def scored_versions(cli_env: Path, shipped_model_dir: Path) -> str:
    """Both versions scored on the same file, the candidate lower; returns the served one."""
    _score_card(cli_env, shipped_model_dir.name, 0.93)
    _score_card(cli_env, CANDIDATE, 0.91)
    return shipped_model_dir.name


def test_use_refuses_a_lower_field_set_score_with_exit_3(
    scored_versions: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve = _FakeServe(monkeypatch, served=scored_versions)
    result = runner.invoke(model_cli, ["use", CANDIDATE])
    assert result.exit_code == 3
    assert "0.9100" in result.output and "0.9300" in result.output
    assert "--force" in result.output
    assert serve.deployed == []


def test_use_with_force_deploys_despite_the_gate(
    scored_versions: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve = _FakeServe(monkeypatch, served=scored_versions)
    result = runner.invoke(model_cli, ["use", CANDIDATE, "--force"])
    assert result.exit_code == 0, result.output
    assert serve.deployed == [CANDIDATE]
    assert f"serving {CANDIDATE}" in result.output


def test_use_deploys_when_the_gate_passes(
    cli_env: Path, scored_versions: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _score_card(cli_env, CANDIDATE, 0.95)
    serve = _FakeServe(monkeypatch, served=scored_versions)
    result = runner.invoke(model_cli, ["use", CANDIDATE])
    assert result.exit_code == 0, result.output
    assert "promotion gate passed" in result.output
    assert serve.deployed == [CANDIDATE]


def test_use_refuses_an_unscored_served_version(
    cli_env: Path, shipped_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _score_card(cli_env, CANDIDATE, 0.95)
    served_card = cli_env / shipped_model_dir.name / "model_card.json"
    card = json.loads(served_card.read_text())
    card.get("metrics", {}).pop("field_sets", None)  # a card from before field-set scores
    served_card.write_text(json.dumps(card))
    serve = _FakeServe(monkeypatch, served=shipped_model_dir.name)
    result = runner.invoke(model_cli, ["use", CANDIDATE])
    assert result.exit_code == 3
    assert f"switchyard model score {shipped_model_dir.name} --data f.jsonl" in result.output
    assert serve.deployed == []
