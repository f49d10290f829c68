"""Classifiers that answer the inference routes without Ray, for the routes' contract tests.

``InProcessClassifier`` runs the shipped model in the test process (the same ``open_model``
the replicas run), so the answers are real; ``FailingClassifier`` is a model that is down.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from intent.routed import open_model
from serving.protocol import BatchResult, ClassifierUnavailable, TextPair


class InProcessClassifier:
    """The ``Classifier`` protocol over a model loaded in this process."""

    def __init__(self, model_dir: Path) -> None:
        self.model = open_model(model_dir)
        self.calls: list[int] = []  # messages per classify call, in order

    @property
    def model_version(self) -> str:
        return self.model.info.model_version

    async def classify(self, pairs: Sequence[TextPair]) -> list[BatchResult]:
        self.calls.append(len(pairs))
        probabilities = await asyncio.to_thread(self.model.predict, list(pairs))
        info = self.model.info
        return [BatchResult(probabilities, info.labels, info.model_version, len(pairs))]

    async def ready(self) -> bool:
        return True

    @property
    def not_ready_reason(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None


class FailingClassifier:
    """A model that cannot be reached: every call fails the way the Ray client reports it."""

    def __init__(self, reason: str = "ActorDiedError: replica at 10.0.0.7 died") -> None:
        self.reason = reason

    async def classify(self, pairs: Sequence[TextPair]) -> list[BatchResult]:
        raise ClassifierUnavailable(self.reason)

    async def ready(self) -> bool:
        return False

    @property
    def not_ready_reason(self) -> str | None:
        return self.reason

    async def aclose(self) -> None:
        return None
