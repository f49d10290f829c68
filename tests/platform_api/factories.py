"""Factories shared by the platform-core tests: install, link, connect over real HTTP calls."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi.testclient import TestClient

T = TypeVar("T")

SHOPIFY_CREDENTIALS = {"shop": "acme", "access_token": "shpat_very_secret_value"}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def install(client: TestClient, headers: dict[str, str], name: str = "shopify") -> dict[str, Any]:
    response = client.post(
        "/v1/environment-integration", json={"integration_name": name}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()


def link_token(client: TestClient, headers: dict[str, str], **body: Any) -> str:
    response = client.post("/v1/link-token", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["link_token"]


def connect(
    client: TestClient,
    headers: dict[str, str],
    *,
    tenant_id: str = "tenant-1",
    integration_name: str = "shopify",
    credentials: dict[str, str] | None = None,
) -> str:
    """Connect an account through a link token and the session endpoint; returns its id."""
    token = link_token(client, headers, tenant_id=tenant_id)
    response = client.post(
        "/connect-account/session",
        json={
            "link_token": token,
            "integration_name": integration_name,
            "credentials": credentials or SHOPIFY_CREDENTIALS,
        },
    )
    assert response.status_code == 201, response.text
    return response.json()["integrated_account_id"]


def collect_pages(
    client: TestClient,
    url: str,
    headers: dict[str, str],
    *,
    limit: int,
    params: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Every page of a list until ``next_cursor`` is null."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**(params or {}), "limit": str(limit)}
        if cursor:
            query["next_cursor"] = cursor
        body = client.get(url, params=query, headers=headers).json()
        assert len(body["result"]) <= limit
        items += body["result"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


def run_together(call: Callable[[], T], times: int = 2) -> list[T]:
    """Run ``call`` in ``times`` threads released at the same moment; their results."""
    barrier = threading.Barrier(times)
    results: list[T] = []

    def run() -> None:
        barrier.wait()
        results.append(call())

    threads = [threading.Thread(target=run) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
