"""A routed version: the language check and the two routes, each input answered by its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from intent.language import LanguageCheck
from intent.model_store import MODEL_CARD
from intent.routed import RoutedModel, open_model, route_dirs
from intent.runner import IntentModel
from intent.text_format import format_input

LANGUAGES = ["en", "de", "es", "fr", "it", "nl", "pt"]
ENGLISH = [
    format_input("where is my parcel"),
    format_input("whn dlvr"),  # misspelt and short: still English
    format_input("order staus"),
    format_input("RMA-77190"),  # no words at all: the English route
    format_input("yes the blue one", [{"role": "agent", "text": "Which colour do you want?"}]),
    # Long enough to tell alone: the customer switched to English, the English model answers.
    format_input(
        "Actually I would rather cancel the whole order, can you do that today?",
        [{"role": "customer", "text": "hola, quiero cambiar la talla de las zapatillas"}],
    ),
]
NOT_ENGLISH = [
    format_input("¿Dónde está mi pedido? Lleva una semana sin moverse."),
    format_input("Ich möchte meine Bestellung stornieren, bitte."),
    format_input("Je voudrais une facture avec mon numéro de TVA."),
    # Too short to tell alone; the Spanish turns before it decide.
    format_input(
        "la 1",
        [
            {"role": "customer", "text": "hola, quiero cambiar la talla de las zapatillas"},
            {"role": "agent", "text": "¡Claro! ¿Cuál prefieres, la 1 o la 2?"},
        ],
    ),
]


@pytest.fixture(scope="module")
def check() -> LanguageCheck:
    return LanguageCheck(LANGUAGES, not_english_at=0.95)


def test_english_messages_short_and_misspelt_ones_included_take_the_english_route(check):
    assert check.english(ENGLISH).all()


def test_messages_in_other_languages_take_the_other_route_history_included(check):
    assert not check.english(NOT_ENGLISH).any()


def test_the_check_refuses_a_setting_that_cannot_route():
    with pytest.raises(ValueError, match="include 'en'"):
        LanguageCheck(["de", "es"], not_english_at=0.95)
    with pytest.raises(ValueError, match="probability"):
        LanguageCheck(LANGUAGES, not_english_at=1.0)


@pytest.fixture(scope="module")
def routed_dir(shipped_one_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A routed version over two copies of one shipped model; the other route's calibration
    differs, so which route answered shows in the probabilities."""
    root = tmp_path_factory.mktemp("routed") / "intent-routed-test"
    shutil.copytree(shipped_one_model_dir, root / "english")
    shutil.copytree(shipped_one_model_dir, root / "other")
    (root / "other" / "calibration.json").write_text(json.dumps({"temperature": 4.0}))
    card = {
        "model_version": "intent-routed-test",
        "routing": {
            "languages": LANGUAGES,
            "not_english_at": 0.95,
            "routes": {"english": "english", "other": "other"},
        },
    }
    (root / MODEL_CARD).write_text(json.dumps(card))
    return root


def test_each_input_gets_its_own_routes_probabilities_in_input_order(routed_dir):
    routed = open_model(routed_dir)
    assert isinstance(routed, RoutedModel)
    assert routed.info.model_version == "intent-routed-test"
    dirs = route_dirs(routed_dir)
    english, other = IntentModel(dirs["english"]), IntentModel(dirs["other"])
    # Interleaved, so a mix-up of positions would show.
    pairs = [p for pair in zip(ENGLISH, NOT_ENGLISH, strict=False) for p in pair] + ENGLISH[4:]
    probabilities = routed.predict(pairs)
    for pair, row in zip(pairs, probabilities, strict=True):
        expected = english.predict([pair]) if pair in ENGLISH else other.predict([pair])
        np.testing.assert_allclose(row, expected[0], rtol=1e-5, atol=1e-6)


def test_a_routed_answer_does_not_depend_on_its_batch_neighbours(routed_dir):
    routed = open_model(routed_dir)
    together = routed.predict(ENGLISH + NOT_ENGLISH)
    alone = np.concatenate([routed.predict([pair]) for pair in ENGLISH + NOT_ENGLISH])
    assert np.abs(together - alone).max() <= 1e-4


def test_a_plain_model_directory_opens_as_one_model(shipped_one_model_dir):
    assert type(open_model(shipped_one_model_dir)) is IntentModel
