"""The inference glance: model versions, requests and p99 from the metrics registry (a fresh
one per test, injected), the shadow comparison, the Ray dashboard link; signed-in operators of
the environment only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, Counter, Histogram

from core.settings import Settings
from platform_api.console.inference import (
    Latency,
    latency_of,
    metrics_registry,
    model_versions,
    ray_dashboard_url,
)
from tests.platform_api.console.conftest import Clock

pytestmark = pytest.mark.db

BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.25)


@pytest.fixture
def registry(app: FastAPI) -> Iterator[CollectorRegistry]:
    fresh = CollectorRegistry()
    app.dependency_overrides[metrics_registry] = lambda: fresh
    yield fresh
    app.dependency_overrides.pop(metrics_registry, None)


def latency_histogram(registry: CollectorRegistry) -> Histogram:
    # The name and label serving/inference_metrics.py registers.
    return Histogram(
        "switchyard_inference_latency_seconds", "latency", ["endpoint"],
        buckets=BUCKETS, registry=registry,
    )  # fmt: skip


def test_inference_page_shows_requests_and_p99_of_the_registry(
    operator_client: TestClient, clock: Clock, registry: CollectorRegistry
) -> None:
    latency = latency_histogram(registry)
    for _ in range(98):
        latency.labels("/v1/classify").observe(0.004)
    latency.labels("/v1/classify-batch").observe(0.015)
    latency.labels("/v1/classify-batch").observe(0.2)

    page = operator_client.get("/console/development/inference")

    assert page.status_code == 200, page.text
    assert '<dd id="requests">100</dd>' in page.text
    # The 99th of 100 requests is the one in the (0.01, 0.02] bucket: its upper end.
    assert '<dd id="p99">20.0 ms</dd>' in page.text
    assert 'aria-current="page">Inference<' in page.text


def test_inference_page_without_requests_says_so(
    operator_client: TestClient, clock: Clock, registry: CollectorRegistry
) -> None:
    page = operator_client.get("/console/development/inference")

    assert '<dd id="requests">0</dd>' in page.text and '<dd id="p99">—</dd>' in page.text
    assert "No shadow traffic" in page.text


def test_inference_page_shows_the_shadow_comparison(
    operator_client: TestClient, clock: Clock, registry: CollectorRegistry
) -> None:
    compared = Counter("switchyard_shadow_compared", "c", ["shadow_version"], registry=registry)
    agreed = Counter("switchyard_shadow_agreements", "a", ["shadow_version"], registry=registry)
    compared.labels("intent-next").inc(40)
    agreed.labels("intent-next").inc(30)

    page = operator_client.get("/console/development/inference")

    row = page.text[page.text.index("<code>intent-next</code>") :].split("</tr>")[0]
    assert "<td>40</td>" in row and "75.0 %" in row


def test_inference_page_shows_the_served_and_previous_model_versions(
    app: FastAPI, operator_client: TestClient, clock: Clock, settings: Settings
) -> None:
    served, previous = model_versions(None, settings)
    assert served is not None
    app.state.classifier = SimpleNamespace(model_version=served)  # duck-typed, as in-process

    page = operator_client.get("/console/development/inference")

    assert f'<code id="served-version">{served}</code>' in page.text
    assert f'<code id="previous-version">{previous or "none kept"}</code>' in page.text
    assert 'href="http://127.0.0.1:8265"' in page.text


def test_model_versions_reads_the_classifier_then_latest(tmp_path: Path) -> None:
    for version in ("intent-202601", "intent-202602", "intent-202603"):
        (tmp_path / version).mkdir()
        (tmp_path / version / "model_card.json").write_text("{}")
    (tmp_path / "LATEST").write_text("intent-202602\n")
    settings = Settings(models_root=tmp_path, model_dir=None)

    assert model_versions(None, settings) == ("intent-202602", "intent-202601")
    in_process = SimpleNamespace(model_version="intent-202603")
    assert model_versions(in_process, settings) == ("intent-202603", "intent-202602")


def test_p99_is_interpolated_inside_its_bucket() -> None:
    registry = CollectorRegistry()
    latency = latency_histogram(registry)
    for _ in range(50):
        latency.labels("/v1/classify").observe(0.03)  # all in (0.02, 0.05]
    summed = latency_of(registry)

    assert summed.count == 50
    assert summed.quantile(0.5) == pytest.approx(0.035)
    assert summed.quantile(0.99) == pytest.approx(0.0497)
    assert Latency(0, ()).quantile(0.99) is None
    # Past every finite bucket: the highest finite bound, as histogram_quantile answers.
    assert Latency(2, ((0.1, 0.0), (float("inf"), 2.0))).quantile(0.99) == 0.1


def test_ray_dashboard_follows_the_cluster_address() -> None:
    remote = Settings(ray_address="ray://10.0.0.5:10001", dashboard_port=9000)
    assert ray_dashboard_url(remote) == "http://10.0.0.5:9000"


def test_inference_page_of_another_environment_is_404(
    operator_client: TestClient, clock: Clock
) -> None:
    assert operator_client.get("/console/staging/inference").status_code == 404
