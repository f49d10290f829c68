"""``IntentClassifier``: the Ray Serve deployment that owns the model and batches its calls.

Callers send lists of text pairs (the HTTP front already groups concurrent requests), so
``@serve.batch`` counts messages, not calls, and one model batch serves several callers.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from ray import serve
from ray.serve.metrics import Counter, Histogram

from core.gc_tuning import freeze_startup_heap
from intent.model_store import resolve_model_dir
from intent.routed import open_model
from intent.runner import Classifier
from serving.protocol import DEPLOYMENT_NAME, BatchResult, TextPair
from serving.rollout import classifier_deployment_config, load_serve_config

log = logging.getLogger("ray.serve")

# The runtime knobs' defaults are the Serve config's (serving/serve_config.yaml), the one place
# they are defined; a deployed config's user_config is applied over them in `reconfigure`.
DEFAULT_USER_CONFIG: dict[str, Any] = classifier_deployment_config(load_serve_config())[
    "user_config"
]


def _count_messages(calls: list[list[TextPair]]) -> int:
    return sum(len(pairs) for pairs in calls)


# Replicas, resources and handle limits come from the Serve config when it is deployed.
@serve.deployment(name=DEPLOYMENT_NAME)
class IntentClassifier:
    """Serves calibrated intent probabilities for batches of (message, history) pairs."""

    def __init__(self, models_root: str | None = None) -> None:
        if models_root is None:
            # Read in the replica, not at import: the cluster's settings decide the default.
            from core.settings import get_settings

            models_root = str(get_settings().models_root)
        self._models_root = Path(models_root)
        self._model: Classifier | None = None
        self._config: dict[str, Any] = {}
        self._batch_sizes = Histogram(
            "intent_classifier_batch_size",
            description="Messages per model batch in a replica (run as length-grouped ONNX "
            "Runtime runs).",
            boundaries=[1, 2, 4, 8, 16, 32, 64, 128],
        )
        self._loads = Counter(
            "intent_classifier_model_loads", description="Model sessions loaded by a replica."
        )

    async def reconfigure(self, user_config: dict[str, Any]) -> None:
        """Apply batching knobs at once; load a new model version before switching to it."""
        config = {**DEFAULT_USER_CONFIG, **(user_config or {})}
        self.classify.set_max_batch_size(int(config["max_batch_size"]))
        self.classify.set_batch_wait_timeout_s(float(config["batch_wait_timeout_s"]))
        model_keys = ("model_version", "intra_op_threads", "inter_op_threads", "allow_spinning")
        if self._model is None or any(config[k] != self._config.get(k) for k in model_keys):
            try:
                self._model = await self._load(config)
            except Exception:
                if self._model is None:
                    raise  # nothing to serve: let Serve report the deployment as failed
                # A bad switch must not take a serving replica down: keep the old model.
                log.exception("model switch failed; still serving %s", self.model_version())
                config = {**config, **{k: self._config[k] for k in model_keys}}
        self._config = config
        # The replica's heap (Ray, Serve, the tokenizer) is here to stay; keep full
        # collections from walking it mid-batch.
        freeze_startup_heap()

    async def _load(self, config: dict[str, Any]) -> Classifier:
        model_dir = resolve_model_dir(self._models_root, config["model_version"])
        # Build the new session off the event loop; in-flight batches keep using the old
        # reference until the caller swaps it, so a switch never drops a request.
        model = await asyncio.to_thread(
            open_model,
            model_dir,
            intra_op_threads=int(config["intra_op_threads"]),
            inter_op_threads=int(config["inter_op_threads"]),
            allow_spinning=bool(config["allow_spinning"]),
        )
        await asyncio.to_thread(model.predict, [("warm up", None)])
        self._loads.inc()
        log.info("loaded model %s from %s", model.info.model_version, model_dir)
        return model

    @serve.batch(
        max_batch_size=DEFAULT_USER_CONFIG["max_batch_size"],
        batch_wait_timeout_s=DEFAULT_USER_CONFIG["batch_wait_timeout_s"],
        batch_size_fn=_count_messages,
    )
    async def classify(self, calls: list[list[TextPair]]) -> list[BatchResult]:
        """One model batch (length-grouped ONNX Runtime runs) for all calls gathered here."""
        model = self._model
        assert model is not None, "reconfigure runs before the first request"
        pairs = [pair for call in calls for pair in call]
        # ONNX Runtime releases the GIL; running it in a thread lets the replica keep
        # accepting calls (and forming the next batch) meanwhile.
        probabilities = await asyncio.to_thread(model.predict, pairs)
        self._batch_sizes.observe(len(pairs))
        info = model.info
        results = []
        start = 0
        for call in calls:
            end = start + len(call)
            results.append(
                BatchResult(probabilities[start:end], info.labels, info.model_version, len(pairs))
            )
            start = end
        return results

    def model_version(self) -> str:
        """The version this replica serves (readiness checks call this)."""
        return self._model.info.model_version if self._model else ""
