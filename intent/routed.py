"""A routed model: a language check sends each message to one of two model directories.

A routed version is a directory whose card holds a ``routing`` entry and two complete model
directories inside it: English messages go to ``routes.english``, the rest to
``routes.other`` (``intent.language``). Each route keeps its own tokenizer, calibration and
card; the routed card holds the scores of the pair as served. ``open_model`` opens either
kind of directory, so the replicas, evaluation and the benchmarks need not know which.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from intent.language import LanguageCheck
from intent.model_store import read_card
from intent.runner import Classifier, IntentModel, ModelInfo
from intent.text_format import TextPair

ROUTING = "routing"
ENGLISH_ROUTE = "english"
OTHER_ROUTE = "other"


def is_routed(card: dict[str, Any]) -> bool:
    """Whether a model card describes a routed version."""
    return ROUTING in card


def route_dirs(model_dir: Path) -> dict[str, Path]:
    """``{"english": ..., "other": ...}``: the route directories of a routed version."""
    routes = read_card(model_dir)[ROUTING]["routes"]
    return {name: Path(model_dir) / routes[name] for name in (ENGLISH_ROUTE, OTHER_ROUTE)}


class RoutedModel(Classifier):
    """Two ``IntentModel`` s behind a language check; outputs in the order of the inputs.

    ``logits`` returns each route's logits divided by that route's temperature, so the pair's
    ``info.temperature`` is 1 and ``predict`` gives each route's calibrated probabilities.
    """

    def __init__(self, model_dir: Path, **session_options: Any) -> None:
        model_dir = Path(model_dir)
        card = read_card(model_dir)
        routing = card[ROUTING]
        dirs = route_dirs(model_dir)
        self.english = IntentModel(dirs[ENGLISH_ROUTE], **session_options)
        self.other = IntentModel(dirs[OTHER_ROUTE], **session_options)
        if self.english.info.labels != self.other.info.labels:
            raise ValueError(f"the two routes of {model_dir} have different labels")
        self.check = LanguageCheck(routing["languages"], float(routing["not_english_at"]))
        self.info = ModelInfo(
            model_version=str(card.get("model_version") or model_dir.name),
            labels=self.english.info.labels,
            max_length=max(self.english.info.max_length, self.other.info.max_length),
            temperature=1.0,
            emoji_style=self.english.info.emoji_style,
        )

    def logits(self, pairs: Sequence[TextPair]) -> np.ndarray:
        """Each input's logits from its route, over that route's temperature."""
        english = self.check.english(pairs)
        out = np.empty((len(pairs), len(self.info.labels)), dtype=np.float32)
        for model, taken in ((self.english, english), (self.other, ~english)):
            index = np.flatnonzero(taken)
            if index.size:
                logits = model.logits([pairs[i] for i in index.tolist()])
                out[index] = logits / np.float32(model.info.temperature)
        return out


def open_model(model_dir: Path, **session_options: Any) -> Classifier:
    """The runner of a model directory: ``RoutedModel`` for a routed version, else
    ``IntentModel`` (``session_options`` as ``IntentModel`` takes them)."""
    if is_routed(read_card(model_dir)):
        return RoutedModel(model_dir, **session_options)
    return IntentModel(model_dir, **session_options)
