"""Prometheus metrics of the HTTP front (default registry, served at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

HTTP_REQUESTS = Counter(
    "switchyard_http_requests_total",
    "HTTP requests by route template, method and status code.",
    ["endpoint", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "switchyard_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template.",
    ["endpoint"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
