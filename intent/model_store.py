"""``models/``: the model versions, ``LATEST``, the model cards and the rules about them.

``models/<version>/`` is one model directory (int8 ONNX model, tokenizer, labels, calibration
and ``model_card.json``); ``models/LATEST`` names the version served by default. Everything
that reads or writes them goes through here: the replicas and ``switchyard model ...``
(serving), ``training.train`` (it writes a version, its card and ``LATEST``), the tests.

The rules of ``models/``:

- **Promotion gate** (``promotion_verdict``, what ``switchyard model use`` applies): a version
  replaces the served one only when its field-set macro-F1 (``metrics.field_sets.field``) is
  not lower, both scored on the same file (same SHA-256).
- **Forced promotion**: a version shipped over one that scored higher names it in its card
  (``promotion.forced_over``) and says why (``promotion.reason``); ``promotion_rule_violations``
  checks a card against every version in ``models/``.
- **Keep two**: ``models/`` holds the served version and at most one other (``KEPT_VERSIONS``;
  ``keep_rule_violation``): every byte committed there stays in every clone.

Imports ``intent.evaluation`` (the field-set entries) and nothing else of ours.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from intent.evaluation import FIELD_SET_NAME, FIELD_SET_PATH, data_reference, field_set_of

LATEST_FILE = "LATEST"
MODEL_CARD = "model_card.json"
# The served version and the one before it (for compare, the notebook and rollback).
KEPT_VERSIONS = 2
# A forced promotion's ``promotion.reason`` says why in at least this many characters.
FORCED_REASON_MIN_CHARS = 40


# --- LATEST and the versions --------------------------------------------------------------


def latest_version(models_root: Path) -> str | None:
    """The version ``models_root/LATEST`` names; None when there is no LATEST."""
    latest = Path(models_root) / LATEST_FILE
    return latest.read_text().strip() if latest.is_file() else None


def set_latest(models_root: Path, version: str) -> None:
    """Point ``models_root/LATEST`` at ``version``."""
    (Path(models_root) / LATEST_FILE).write_text(version + "\n")


def list_versions(models_root: Path) -> list[Path]:
    """The model directories under ``models_root`` (those holding a card), sorted by name."""
    return sorted(p.parent for p in Path(models_root).glob(f"*/{MODEL_CARD}"))


def resolve_model_dir(models_root: Path, model_version: str | None = None) -> Path:
    """``models_root/<version>``; without a version, the one named in ``models_root/LATEST``."""
    if not model_version:
        model_version = latest_version(models_root)
        if model_version is None:
            latest = models_root / LATEST_FILE
            raise FileNotFoundError(f"no model version given and {latest} does not exist")
    model_dir = models_root / model_version
    if not has_card(model_dir):
        raise FileNotFoundError(f"{model_dir} holds no {MODEL_CARD}")
    return model_dir


# --- model cards --------------------------------------------------------------------------


def card_path(model_dir: Path) -> Path:
    """Where a model directory's card lives."""
    return Path(model_dir) / MODEL_CARD


def has_card(model_dir: Path) -> bool:
    """Whether ``model_dir`` is a model directory (it holds a card)."""
    return card_path(model_dir).is_file()


def read_card(model_dir: Path) -> dict[str, Any]:
    """The model card of ``model_dir``."""
    card: dict[str, Any] = json.loads(card_path(model_dir).read_text())
    return card


def write_card(model_dir: Path, card: Mapping[str, Any]) -> Path:
    """Write ``card`` as the model card of ``model_dir``; returns its path."""
    path = card_path(model_dir)
    path.write_text(json.dumps(card, indent=2))
    return path


def card_of_version(models_root: Path, model_version: str) -> dict[str, Any] | None:
    """The card of a served ``model_version``: its directory's, else the card naming it."""
    direct = card_path(models_root / model_version)
    paths = [direct] if direct.is_file() else sorted(models_root.glob(f"*/{MODEL_CARD}"))
    for path in paths:
        card: dict[str, Any] = json.loads(path.read_text())
        if path == direct or card.get("model_version") == model_version:
            return card
    return None


# --- the promotion gate -------------------------------------------------------------------


def promotion_verdict(
    candidate_card: Mapping[str, Any], served_card: Mapping[str, Any]
) -> tuple[bool, str]:
    """May the candidate replace the served version? ``(allowed, reason)``.

    Allowed when the candidate's ``metrics.field_sets.field`` macro-F1 is at least the served
    version's and both were scored on the same file (same SHA-256); refused when it is lower,
    when either card has no such entry or when the files differ.
    """
    candidate = str(candidate_card.get("model_version", "the candidate"))
    served = str(served_card.get("model_version", "the served version"))
    if candidate == served:
        return True, f"{candidate} is the served version"
    ours, theirs = _field_score(candidate_card), _field_score(served_card)
    force = "or pass --force to deploy anyway"
    default_data = data_reference(FIELD_SET_PATH)
    if ours is None or theirs is None:
        missing = [name for name, entry in ((candidate, ours), (served, theirs)) if entry is None]
        data = (ours or theirs or {}).get("data", default_data)
        commands = "; ".join(f"`switchyard model score {name} --data {data}`" for name in missing)
        return False, (
            f"refused: no field-set score (metrics.field_sets.{FIELD_SET_NAME}) in the model "
            f"card of {' and '.join(missing)}: run {commands}, {force}"
        )
    if ours["sha256"] != theirs["sha256"]:
        return False, (
            f"refused: {candidate} was scored on {ours['data']} (sha256 {ours['sha256'][:12]}) "
            f"and {served} on {theirs['data']} (sha256 {theirs['sha256'][:12]}): run "
            f"`switchyard model score {candidate} --data {theirs['data']}` to score both on "
            f"the same file, {force}"
        )
    if ours["macro_f1"] < theirs["macro_f1"]:
        return False, (
            f"refused: {candidate} field-set macro-F1 {ours['macro_f1']:.4f} is lower than "
            f"the served {served}'s {theirs['macro_f1']:.4f} (on {theirs['data']}); pass "
            "--force to deploy anyway"
        )
    return True, (
        f"promotion gate passed: {candidate} field-set macro-F1 {ours['macro_f1']:.4f}, "
        f"served {served} {theirs['macro_f1']:.4f} (on {theirs['data']})"
    )


def _field_score(card: Mapping[str, Any]) -> dict[str, Any] | None:
    """The card's field-set entry when it holds what the gate compares, else None."""
    entry = field_set_of(card)
    if entry is None or not isinstance(entry.get("sha256"), str):
        return None
    if not isinstance(entry.get("macro_f1"), int | float):
        return None
    return entry


def forced_promotion(card: Mapping[str, Any]) -> tuple[list[str], str]:
    """The versions a card's promotion was forced over (``promotion.forced_over``) and why
    (``promotion.reason``); ``([], "")`` for a promotion the gate passed."""
    promotion = card.get("promotion") or {}
    return list(promotion.get("forced_over", [])), str(promotion.get("reason", ""))


def promotion_rule_violations(models_root: Path, card: Mapping[str, Any]) -> list[str]:
    """Where ``card`` breaks the gate's rule against the versions under ``models_root``.

    Every version scored on the same field-set file must have a macro-F1 no higher than the
    card's, unless the card names it in ``promotion.forced_over`` with a reason of at least
    ``FORCED_REASON_MIN_CHARS`` characters. Versions without a field-set score on that file
    are not compared. Empty when the rule holds.
    """
    ours = field_set_of(card)
    if ours is None:
        return [f"no metrics.field_sets.{FIELD_SET_NAME} in the card"]
    forced_over, reason = forced_promotion(card)
    problems = []
    for model_dir in list_versions(models_root):
        theirs = field_set_of(read_card(model_dir))
        if theirs is None or theirs.get("sha256") != ours["sha256"]:
            continue
        if model_dir.name in forced_over:
            if len(reason) < FORCED_REASON_MIN_CHARS:
                problems.append(f"forced over {model_dir.name}: a forced promotion says why")
        elif ours["macro_f1"] < theirs["macro_f1"]:
            problems.append(
                f"{model_dir.name} scored higher on {theirs.get('data')}: "
                f"{theirs['macro_f1']:.4f} against {ours['macro_f1']:.4f}"
            )
    return problems


# --- the keep-two rule --------------------------------------------------------------------


def keep_rule_violation(versions: Collection[str], latest: str | None) -> str | None:
    """Why ``versions`` (the version folders of ``models/``) break the keep-two rule, or None.

    ``LATEST`` must name one of them, and at most ``KEPT_VERSIONS - 1`` others may stay
    beside it.
    """
    if latest not in versions:
        return f"models/LATEST names {latest!r}, not one of its version folders"
    if len(set(versions) - {latest}) > KEPT_VERSIONS - 1:
        return f"keep one version beside {latest}: {sorted(versions)}"
    return None
