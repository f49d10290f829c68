"""Pair two trained model directories into one routed version behind a language check.

    python -m training.route --english models/intent-minilm-... --other /tmp/intent-e5small-...

English messages go to ``--english``, the rest to ``--other`` (``intent.routed``). Both must
have been trained on the same data (their cards' sources and split fingerprints agree), so
the pair has one test split: the routed card scores the pair as served on it, on the field
set the promotion gate compares, and records how many rows each route took.

Each route's temperature is fitted again on the validation rows the check sends to it: a run
calibrated on every language is overconfident or timid on the part it will serve.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from intent.language import ENGLISH, LanguageCheck
from intent.model_store import read_card, write_card
from intent.routed import ENGLISH_ROUTE, OTHER_ROUTE, ROUTING, RoutedModel
from intent.runner import CALIBRATION_FILE, IntentModel
from intent.text_format import format_input
from training import calibrate
from training.cli_args import parse_args
from training.evaluate import evaluate_rows, load_splits_for_model
from training.labels import LABEL_TO_ID
from training.train import (
    calibration_entry,
    finish_version,
    headline_scores,
    scores_by_source,
)

# The languages the check chooses among: English and the six of field set v3.
LANGUAGES = (ENGLISH, "de", "es", "fr", "it", "nl", "pt")
LANGUAGE_CHECK = (
    "py3langid 0.4.0 over the message, and its history when the message alone leaves it "
    "unsure, among the languages listed"
)


@dataclass
class RouteArgs:
    """Command-line arguments of ``python -m training.route``."""

    english: str = field(metadata={"help": "model directory for English messages"})
    other: str = field(metadata={"help": "model directory for the other languages"})
    not_english_at: float = field(
        default=0.95,
        metadata={"help": "send a message to --other when P(not English) is at least this"},
    )
    models_dir: str = field(default="models", metadata={"help": "where the version is written"})
    set_latest: bool = field(default=False, metadata={"help": "point models/LATEST at it"})


def routed_version(english: str, other: str, created: datetime) -> str:
    """``intent-routed-<YYYYMMDDHHMM>-<hash of the two route versions>``."""
    digest = hashlib.sha256(f"{english}\n{other}".encode()).hexdigest()[:7]
    return f"intent-routed-{created:%Y%m%d%H%M}-{digest}"


def same_data(english_card: dict[str, Any], other_card: dict[str, Any]) -> list[str]:
    """Where the two routes' training data differ (empty when it is the same)."""
    problems = []
    for key in ("sources", "split_fingerprints", "seed", "val_frac", "test_frac"):
        if english_card["data"].get(key) != other_card["data"].get(key):
            problems.append(f"data.{key}")
    return problems


def routing_entry(not_english_at: float, english: str, other: str) -> dict[str, Any]:
    """The card's ``routing``: how a message picks its route, and the routes' versions."""
    return {
        "check": LANGUAGE_CHECK,
        "languages": list(LANGUAGES),
        "not_english_at": not_english_at,
        "routes": {ENGLISH_ROUTE: ENGLISH_ROUTE, OTHER_ROUTE: OTHER_ROUTE},
        "route_versions": {ENGLISH_ROUTE: english, OTHER_ROUTE: other},
    }


def route_shares(model: RoutedModel, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many rows the English route took, by the rows' ``language`` (English if unset)."""
    pairs = [format_input(r["message"], r.get("conversation_history")) for r in rows]
    english = model.check.english(pairs)
    languages = np.array([r.get("language", ENGLISH) for r in rows])
    return {
        language: {
            "rows": int((languages == language).sum()),
            "english_route": int(english[languages == language].sum()),
        }
        for language in sorted(set(languages.tolist()))
    }


def recalibrate_routes(
    model_dir: Path, rows: list[dict[str, Any]], check: LanguageCheck
) -> dict[str, Any]:
    """Fit each route's temperature on the ``rows`` (validation) the check sends to it and
    rewrite the route's ``calibration.json``; returns the card's ``routing.calibration``."""
    pairs = [format_input(r["message"], r.get("conversation_history")) for r in rows]
    english = check.english(pairs)
    y_true = np.array([LABEL_TO_ID[r["label"]] for r in rows])
    entries = {}
    for route, taken in ((ENGLISH_ROUTE, english), (OTHER_ROUTE, ~english)):
        route_dir = Path(model_dir) / route
        index = np.flatnonzero(taken)
        model = IntentModel(route_dir, intra_op_threads=0)
        logits = model.logits_for_messages(
            [rows[i]["message"] for i in index],
            [rows[i].get("conversation_history") for i in index],
        )
        temperature = calibrate.fit_temperature(logits, y_true[index])
        entry = calibration_entry(logits, y_true[index], temperature)
        entry["fitted_on"] = f"validation rows the language check sends to the {route} route"
        (route_dir / CALIBRATION_FILE).write_text(json.dumps(entry, indent=2))
        entries[route] = {
            "rows": int(index.size),
            "temperature_of_the_run": model.info.temperature,
            "temperature": temperature,
            "validation_ece_after": entry["validation_ece_after"],
        }
        print(
            f"{route} route: {index.size} validation rows, temperature "
            f"{model.info.temperature:.3f} -> {temperature:.3f}, "
            f"ECE {entry['validation_ece_after']:.4f}"
        )
    return entries


def build(args: RouteArgs, created: datetime | None = None) -> Path:
    """Write the routed version; returns its directory."""
    created = created or datetime.now(UTC)
    english_dir, other_dir = Path(args.english), Path(args.other)
    english_card, other_card = read_card(english_dir), read_card(other_dir)
    problems = same_data(english_card, other_card)
    if problems:
        raise SystemExit(f"the two routes were trained on different data: {', '.join(problems)}")
    if english_card["labels"] != other_card["labels"]:
        raise SystemExit("the two routes have different labels")

    version = routed_version(english_card["model_version"], other_card["model_version"], created)
    model_dir = Path(args.models_dir) / version
    shutil.copytree(english_dir, model_dir / ENGLISH_ROUTE)
    shutil.copytree(other_dir, model_dir / OTHER_ROUTE)
    card: dict[str, Any] = {
        "model_version": version,
        "created_at": created.isoformat(timespec="seconds"),
        "labels": english_card["labels"],
        "label_guide": "docs/label-guide.md",
        ROUTING: routing_entry(
            args.not_english_at, english_card["model_version"], other_card["model_version"]
        ),
        # One data set for both routes; the baseline follows the English route's recipe.
        "data": english_card["data"],
        "training": english_card["training"] | {"route": ENGLISH_ROUTE},
        "size_bytes": {
            route: (model_dir / route / card_of["onnx_file"]).stat().st_size
            for route, card_of in ((ENGLISH_ROUTE, english_card), (OTHER_ROUTE, other_card))
        },
    }
    write_card(model_dir, card)

    splits = load_splits_for_model(model_dir)
    check = LanguageCheck(LANGUAGES, args.not_english_at)
    card[ROUTING]["calibration"] = recalibrate_routes(model_dir, splits["validation"], check)
    write_card(model_dir, card)
    model = RoutedModel(model_dir, intra_op_threads=0)
    test = splits["test"]
    result = evaluate_rows(
        model_dir, test, model_dir / "eval" / "test-split", name="test-split", model=model
    )
    card["metrics"] = {
        "test": {
            "int8": headline_scores(result["transformer"]),
            "baseline_tfidf_lr": headline_scores(result["baseline"]),
        },
        "test_by_source": scores_by_source(test, model.predict_rows(test).argmax(axis=1)),
        "routes_taken": {"test": route_shares(model, test)},
        # Each route's int8 graph against its fp32 graph, over the whole test split.
        "int8_fp32_top1_agreement": {
            route: card_of["metrics"]["test"]["int8_fp32_top1_agreement"]
            for route, card_of in ((ENGLISH_ROUTE, english_card), (OTHER_ROUTE, other_card))
        },
        "calibration": card[ROUTING]["calibration"],
    }
    return finish_version(card, model, model_dir, args.models_dir, args.set_latest)


def main(argv: list[str] | None = None) -> Path:
    return build(parse_args(RouteArgs, argv))


if __name__ == "__main__":
    main()
