"""Ray's own floor: a no-op stand-in for the model, called exactly as the front calls it.

Deployed as an application of its own (``floor``) whose deployment has the model's name,
batching and placement, so a front started with ``SWITCHYARD_SERVE_APP_NAME=floor`` runs the
whole request path (HTTP, authentication, rate limit, micro-batching, the handle call, the
replica's ``@serve.batch``) with the model run replaced by uniform probabilities. Its latency
is what the service would cost with a free model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray import serve

from serving.protocol import DEPLOYMENT_NAME, BatchResult, TextPair

APP_NAME = "floor"
LABELS = tuple(f"intent_{i}" for i in range(10))


def _count_messages(calls: list[list[TextPair]]) -> int:
    return sum(len(pairs) for pairs in calls)


@serve.deployment(name=DEPLOYMENT_NAME)
class NoOpClassifier:
    """Answers every call at once; the shipped model's batching knobs, no model."""

    @serve.batch(max_batch_size=64, batch_wait_timeout_s=0.0, batch_size_fn=_count_messages)
    async def classify(self, calls: list[list[TextPair]]) -> list[BatchResult]:
        total = sum(len(call) for call in calls)
        uniform = np.full((1, len(LABELS)), 1 / len(LABELS), dtype=np.float32)
        return [
            BatchResult(np.repeat(uniform, len(call), axis=0), LABELS, "noop", total)
            for call in calls
        ]

    def model_version(self) -> str:
        return "noop"


def deploy_floor(deployment_config: dict[str, Any]) -> None:
    """Run the no-op application with the shipped deployment's replicas and router."""
    autoscaling = deployment_config.get("autoscaling_config") or {}
    replicas = int(autoscaling.get("min_replicas", 1))
    app = NoOpClassifier.options(  # type: ignore[attr-defined]
        num_replicas=replicas,
        max_ongoing_requests=deployment_config.get("max_ongoing_requests", 64),
        ray_actor_options=deployment_config.get("ray_actor_options", {}),
        request_router_config=deployment_config.get("request_router_config"),
    ).bind()
    serve.run(app, name=APP_NAME, route_prefix=None)


def remove_floor() -> None:
    serve.delete(APP_NAME)
