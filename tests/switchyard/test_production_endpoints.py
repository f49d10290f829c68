"""Production mode: /metrics only with the metrics token (404 while none is set), and /readyz
tells anonymous callers its status alone; development mode keeps both open."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient

from core.settings import Settings
from switchyard.app import create_app
from tests.assertions import assert_error

METRICS_TOKEN = "metrics-secret-1234"


@contextmanager
def _client(settings: Settings, **values: Any) -> Iterator[TestClient]:
    with TestClient(create_app(settings.model_copy(update=values))) as client:
        yield client


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_production_metrics_without_a_metrics_token_are_not_served(
    settings: Settings, db: None
) -> None:
    with _client(settings, mode="production", metrics_token=None) as client:
        assert_error(client.get("/metrics"), 404, "NOT_FOUND")
        assert_error(client.get("/metrics", headers=_bearer("anything")), 404, "NOT_FOUND")


def test_production_metrics_need_the_metrics_token(settings: Settings, db: None) -> None:
    with _client(settings, mode="production", metrics_token=METRICS_TOKEN) as client:
        assert_error(client.get("/metrics"), 401, "UNAUTHORIZED")
        assert_error(client.get("/metrics", headers=_bearer("nope")), 401, "UNAUTHORIZED")
        right = client.get("/metrics", headers=_bearer(METRICS_TOKEN))
        assert right.status_code == 200
        assert "switchyard_http_requests_total" in right.text


def test_development_metrics_stay_open_without_a_token(settings: Settings, db: None) -> None:
    with _client(settings, mode="development", metrics_token=None) as client:
        assert client.get("/metrics").status_code == 200


def test_production_readyz_tells_anonymous_callers_the_status_alone(
    settings: Settings, db: None
) -> None:
    with _client(settings, mode="production", metrics_token=METRICS_TOKEN) as client:
        for headers in ({}, _bearer("sy_not_a_token"), {"Authorization": "Basic abc"}):
            response = client.get("/readyz", headers=headers)
            # Ready or not (a model may be up from an earlier test): the status and nothing else.
            assert response.status_code in (200, 503)
            said = "ready" if response.status_code == 200 else "not_ready"
            assert response.json() == {"status": said}


@pytest.mark.parametrize("credential", ["metrics token", "api token"])
def test_production_readyz_details_for_a_token_holder(
    settings: Settings, make_token: Callable[..., str], credential: str
) -> None:
    secret = METRICS_TOKEN if credential == "metrics token" else make_token()
    with _client(settings, mode="production", metrics_token=METRICS_TOKEN) as client:
        response = client.get("/readyz", headers=_bearer(secret))
    body = response.json()
    assert body["status"] == ("ready" if response.status_code == 200 else "not_ready")
    assert body["checks"]["database"] is True and "model" in body["checks"]
    # Each failing check says why.
    assert set(body.get("causes", {})) == {k for k, ok in body["checks"].items() if not ok}


def test_development_readyz_details_for_anyone(settings: Settings, db: None) -> None:
    with _client(settings, mode="development") as client:
        body = client.get("/readyz").json()
    assert {"status", "checks"} <= set(body) <= {"status", "checks", "causes"}
    assert body["checks"]["database"] is True
