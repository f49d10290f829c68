"""The shipped model gives a message the same confidences whoever else is in its batch.

A replica scores whatever the fronts grouped together: alone, among 63 short messages, or in
one call with a long conversation. ``threshold`` and ``top_intent`` mean something only if
the answer does not depend on that (to 1e-4).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from intent.routed import open_model
from intent.runner import Classifier
from intent.text_format import format_input

TOLERANCE = 1e-4
PROBES = [
    ("where is my parcel, it was due on monday", None),
    ("CANCEL MY ORDER NOW", None),
    ("i want my money back for the broken lamp", None),
    ("do you have the trail runners in a 44?", None),
    ("the courier left it at the wrong address, can i change it for next time", None),
    ("my card got charged twice for order 88213", None),
    ("honestly the best customer service i've had, thank you", None),
    ("two weeks for a t-shirt. amazing.", None),
    ("how do i send back the jacket, it's too small", None),
    ("do you ship to norway", None),
    ("yes please", [{"role": "agent", "text": "Shall I cancel order 5521 for you?"}]),
    ("the second one", [{"role": "customer", "text": "my mixer arrived broken"},
                        {"role": "agent", "text": "I can send a replacement or refund you."}]),
]  # fmt: skip
FILLERS = [
    "where is my order", "cancel it please", "refund?", "is this in stock in blue?",
    "card declined", "new address pls", "thanks!", "never arrived", "return label?", "awful",
]  # fmt: skip


@pytest.fixture(scope="module")
def model(shipped_model_dir: Path) -> Classifier:
    return open_model(shipped_model_dir)  # as served: a routed version's pair included


def _fifty_turn_history() -> list[dict[str, str]]:
    return [
        {"role": "agent" if i % 2 else "customer", "text": f"message {i} about order 5521"}
        for i in range(50)
    ]


def test_confidences_do_not_depend_on_the_batch(model: Classifier) -> None:
    fillers = [format_input(FILLERS[i % len(FILLERS)], None) for i in range(63)]
    long_conversation = format_input("any news?", _fifty_turn_history())
    for message, history in PROBES:
        pair = format_input(message, history)
        alone = model.predict([pair])[0]
        among_short = model.predict([*fillers[:40], pair, *fillers[40:]])[40]
        beside_history = model.predict([pair, long_conversation])[0]
        assert np.abs(alone - among_short).max() <= TOLERANCE, message
        assert np.abs(alone - beside_history).max() <= TOLERANCE, message


def test_a_long_conversation_scores_the_same_alone_and_in_a_crowd(model: Classifier) -> None:
    pair = format_input("and now?", _fifty_turn_history())
    fillers = [format_input(FILLERS[i % len(FILLERS)], None) for i in range(31)]
    alone = model.predict([pair])[0]
    crowded = model.predict([*fillers, pair])[31]
    assert np.abs(alone - crowded).max() <= TOLERANCE
