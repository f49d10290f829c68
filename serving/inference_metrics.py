"""Inference metrics of the HTTP front (prometheus_client default registry, served at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

INFERENCE_LATENCY = Histogram(
    "switchyard_inference_latency_seconds",
    "Server-side inference time of a request (queueing, model call, result), by endpoint.",
    ["endpoint"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5),
)
BATCH_SIZE = Histogram(
    "switchyard_inference_batch_size",
    "Messages per call to the model deployment (one observation per model call).",
    buckets=(1, 2, 4, 8, 16, 32, 48, 64, 100, 128),
)
PREDICTIONS = Counter(
    "switchyard_predictions_total",
    "Classified messages by top intent.",
    ["intent"],
)

# Shadow traffic (serving/shadow.py): every count is of messages, by the shadow's version.
SHADOW_COMPARED = Counter(
    "switchyard_shadow_compared_total",
    "Messages the shadow model also classified, its top intent compared with the served one.",
    ["shadow_version"],
)
SHADOW_AGREEMENTS = Counter(
    "switchyard_shadow_agreements_total",
    "Compared messages where the shadow's top intent equals the served top intent.",
    ["shadow_version"],
)
SHADOW_DISAGREEMENTS = Counter(
    "switchyard_shadow_disagreements_total",
    "Compared messages where the top intents differ, by (served, shadow) intent pair.",
    ["shadow_version", "served_intent", "shadow_intent"],
)
SHADOW_DROPPED = Counter(
    "switchyard_shadow_dropped_total",
    "Sampled messages not copied to the shadow because the front's copy bound was full.",
    ["shadow_version"],
)
SHADOW_ERRORS = Counter(
    "switchyard_shadow_errors_total",
    "Copied messages the shadow did not answer (error or timeout); never seen by clients.",
    ["shadow_version"],
)
