"""The console's inference glance: the served model version and the one before it, requests
and an estimated p99 from this front's own Prometheus metrics, the shadow comparison when one
runs, and a link to the Ray dashboard. The data is global; the environment only places the
page in the console.

platform_api never imports serving/ (tests/test_package_boundaries.py): the classifier is read
from ``app.state`` by duck typing, the metrics by name from the registry."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import REGISTRY, CollectorRegistry

from core.settings import Settings
from platform_api.api.deps import SettingsDep
from platform_api.console import auth
from platform_api.console.pages import ConsoleRoute, render

router = APIRouter(route_class=ConsoleRoute)

# The names serving/inference_metrics.py registers (read here by name, not imported).
LATENCY = "switchyard_inference_latency_seconds"
SHADOW_COMPARED = "switchyard_shadow_compared_total"
SHADOW_AGREEMENTS = "switchyard_shadow_agreements_total"
SHADOW_ERRORS = "switchyard_shadow_errors_total"
MODEL_CARD = "model_card.json"
LATEST_FILE = "LATEST"


def metrics_registry() -> CollectorRegistry:
    """Where the inference metrics are (tests override this dependency with their own)."""
    return REGISTRY


RegistryDep = Annotated[CollectorRegistry, Depends(metrics_registry)]


@dataclass(frozen=True)
class Latency:
    """An inference latency histogram summed over its endpoints."""

    count: int
    buckets: tuple[tuple[float, float], ...]  # (upper bound in seconds, cumulative count)

    def quantile(self, q: float) -> float | None:
        """Seconds under which a ``q`` share of requests finished, interpolated linearly
        inside the bucket it falls in (as Prometheus' ``histogram_quantile``); None without
        requests; the highest finite bound when it falls in the +Inf bucket."""
        if self.count <= 0:
            return None
        rank = q * self.count
        lower, below = 0.0, 0.0
        for bound, cumulative in self.buckets:
            if cumulative >= rank:
                if math.isinf(bound):
                    return lower
                inside = cumulative - below
                return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
            lower, below = bound, cumulative
        return lower


def latency_of(registry: CollectorRegistry, name: str = LATENCY) -> Latency:
    """The histogram ``name`` of ``registry``, every label set added up (empty if absent)."""
    count = 0.0
    buckets: dict[float, float] = {}
    for metric in registry.collect():
        if metric.name != name:
            continue
        for sample in metric.samples:
            if sample.name == f"{name}_count":
                count += sample.value
            elif sample.name == f"{name}_bucket":
                bound = float(sample.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + sample.value
    return Latency(int(count), tuple(sorted(buckets.items())))


def _counter_by_label(registry: CollectorRegistry, name: str, label: str) -> dict[str, float]:
    totals: dict[str, float] = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == name and label in sample.labels:
                key = sample.labels[label]
                totals[key] = totals.get(key, 0.0) + sample.value
    return totals


def shadow_report(registry: CollectorRegistry) -> list[dict[str, Any]]:
    """Per shadow version: messages compared, the share agreeing, errors (this front's
    counts; ``switchyard model shadow --report`` adds every front's up)."""
    compared = _counter_by_label(registry, SHADOW_COMPARED, "shadow_version")
    agreed = _counter_by_label(registry, SHADOW_AGREEMENTS, "shadow_version")
    errors = _counter_by_label(registry, SHADOW_ERRORS, "shadow_version")
    return [
        {
            "version": version,
            "compared": int(total),
            "agreement": agreed.get(version, 0.0) / total if total else None,
            "errors": int(errors.get(version, 0.0)),
        }
        for version, total in sorted(compared.items())
    ]


def _versions_on_disk(models_root: Path) -> list[str]:
    return sorted(p.parent.name for p in Path(models_root).glob(f"*/{MODEL_CARD}"))


def model_versions(classifier: Any, settings: Settings) -> tuple[str | None, str | None]:
    """The served model version and the one before it (``models/`` keeps those two).

    The served one is the classifier's own ``model_version`` when it has one (a model run in
    this process), else the directory the service is set to serve, else ``models/LATEST``."""
    served = getattr(classifier, "model_version", None)
    if not isinstance(served, str) or not served:
        if settings.model_dir is not None:
            served = Path(settings.model_dir).name
        else:
            latest = Path(settings.models_root) / LATEST_FILE
            served = latest.read_text().strip() if latest.is_file() else None
    others = [v for v in _versions_on_disk(settings.models_root) if v != served]
    # Version names start with the training time, so the newest other one came before.
    earlier = [v for v in others if served is None or v < served] or others
    return served, (earlier[-1] if earlier else None)


def ray_dashboard_url(settings: Settings) -> str:
    """The Ray dashboard: on the cluster's host when ``RAY_ADDRESS`` names one, else local
    (Ray's default port, 8265, unless ``SWITCHYARD_DASHBOARD_PORT`` says otherwise)."""
    host = "127.0.0.1"
    address = settings.ray_address or ""
    if address and address != "auto":
        host = urlsplit(address if "://" in address else f"ray://{address}").hostname or host
    return f"http://{host}:{settings.dashboard_port}"


def _ms(seconds: float | None) -> str | None:
    return None if seconds is None else f"{seconds * 1000:.1f}"


@router.get("/{environment}/inference")
def inference_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    settings: SettingsDep,
    registry: RegistryDep,
) -> Response:
    """The model, its traffic and latency in this front, the shadow, the Ray dashboard."""
    served, previous = model_versions(getattr(request.app.state, "classifier", None), settings)
    latency = latency_of(registry)
    context = {
        "operator": signed_in.user,
        "environment": environment,
        "csrf_token": signed_in.session.csrf_token,
        "section": "inference",
        "served": served,
        "previous": previous,
        "requests": latency.count,
        "p99_ms": _ms(latency.quantile(0.99)),
        "p50_ms": _ms(latency.quantile(0.5)),
        "shadows": shadow_report(registry),
        "dashboard_url": ray_dashboard_url(settings),
    }
    return render(request, "inference.html", context)
