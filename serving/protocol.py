"""What crosses the Ray boundary between the HTTP front and the model deployment.

Kept free of onnxruntime so the front can unpickle results without loading the model stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from intent.text_format import TextPair

# Where the model lives in Serve: the application and its one deployment.
APP_NAME = "switchyard"
DEPLOYMENT_NAME = "IntentClassifier"

__all__ = [
    "APP_NAME",
    "DEPLOYMENT_NAME",
    "BatchResult",
    "Classifier",
    "ClassifierOverloaded",
    "ClassifierUnavailable",
]
__all__ += ["TextPair"]


@dataclass(frozen=True)
class BatchResult:
    """Probabilities for one call's messages, with what is needed to read them."""

    probabilities: np.ndarray  # float32 [n_messages, n_labels], rows sum to 1
    labels: tuple[str, ...]
    model_version: str
    batch_size: int  # messages in the model run this call was part of


class ClassifierUnavailable(RuntimeError):
    """The model could not be reached or did not answer in time."""


class ClassifierOverloaded(ClassifierUnavailable):
    """The front's queue is full: shed the request at once rather than queue it."""


class Classifier(Protocol):
    """What the inference routes need of a model: the front's Ray client, or a local stand-in."""

    async def classify(self, pairs: Sequence[TextPair]) -> list[BatchResult]:
        """Probabilities for ``pairs``: one result per model call, covering them in order."""
        ...

    async def ready(self) -> bool:
        """True when the model answers (``/readyz``)."""
        ...

    @property
    def not_ready_reason(self) -> str | None:
        """Why the last ``ready()`` was False, in one line (None when it was True)."""
        ...

    async def aclose(self) -> None:
        """Let go of calls still waiting; the app calls it on shutdown."""
        ...
