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
