"""The sandbox upstream as `switchyard run` starts it: a real process on its own port."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from core.settings import Settings
from switchyard.processes import service_processes
from tests.conftest import free_port
from tests.platform_api.unified.helpers import make_account


@pytest.fixture
def sandbox_process(settings: Settings) -> Iterator[str]:
    """The `sandbox` process of `switchyard run`, on a free port the settings point at."""
    saved = settings.sandbox_port
    settings.sandbox_port = free_port()
    spec = next(p for p in service_processes(settings) if p.name == "sandbox")
    env = {**os.environ, **spec.env, "SWITCHYARD_SANDBOX_PORT": str(settings.sandbox_port)}
    child = subprocess.Popen(spec.argv, env=env)
    url = settings.resolved_sandbox_url
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or child.poll() is not None:
                raise RuntimeError("the sandbox process did not start")
            time.sleep(0.1)
        yield url
    finally:
        child.terminate()
        child.wait(timeout=10)
        settings.sandbox_port = saved


def test_run_starts_the_sandbox_with_seeded_data(sandbox_process: str, settings: Settings) -> None:
    spec = next(p for p in service_processes(settings) if p.name == "sandbox")
    assert spec.listens_on == sandbox_process
    response = httpx.get(
        f"{sandbox_process}/store/orders",
        params={"limit": 100},
        headers={"Authorization": "Bearer sk_sandbox_demo"},
    )
    assert response.status_code == 200
    assert len(response.json()["data"]) == 100 and response.json()["next_cursor"] == "ord_5100"


@pytest.mark.db
def test_a_new_sandbox_account_reaches_the_process_without_overrides(
    sandbox_process: str, client: TestClient, auth_headers: dict[str, str]
) -> None:
    account_id = make_account("sandbox", {"api_key": "sk_sandbox_demo"}, base_url=None)
    response = client.get(
        "/v1/unified/wms/returns",
        params={"integrated_account_id": account_id, "limit": 5, "status": "completed"},
        headers=auth_headers,
    )
    assert response.status_code == 200, response.text
    returns = response.json()["result"]
    assert len(returns) == 5
    assert all(r["status"] == "completed" and r["refund_amount"] > 0 for r in returns)
