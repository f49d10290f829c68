"""Concurrent unified calls over real HTTP: one shared provider client, shared expressions."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.platform_api.unified.conftest import Upstream, UpstreamFor
from tests.platform_api.unified.providers import HUBSPOT, SANDBOX

pytestmark = pytest.mark.db


def test_concurrent_calls_on_two_providers_each_get_their_own_records(
    live_server: str, auth_headers: dict[str, str], upstream_for: UpstreamFor
) -> None:
    sandbox, hubspot = upstream_for(SANDBOX), upstream_for(HUBSPOT)
    jobs = [
        ("/v1/unified/wms/orders", sandbox, [o["id"] for o in sandbox.data.orders.values()]),
        ("/v1/unified/crm/contacts", hubspot, list(hubspot.data["contacts"])),
    ] * 6

    def fetch(job: tuple[str, Upstream, list[Any]]) -> tuple[list[Any], list[Any]]:
        path, upstream, expected = job
        params: dict[str, str | int] = {"integrated_account_id": upstream.account_id, "limit": 40}
        with httpx.Client(base_url=live_server, headers=auth_headers, timeout=60) as client:
            body = client.get(path, params=params).json()
        return [r["id"] for r in body["result"]], expected[:40]

    with ThreadPoolExecutor(max_workers=6) as pool:
        for got, expected in pool.map(fetch, jobs):
            assert got == expected
    with httpx.Client(base_url=live_server, headers=auth_headers) as client:
        log = client.get("/v1/api-log", params={"limit": 200}).json()["result"]
    assert len(log) == len(jobs)
    assert all(entry["status"] == 200 for entry in log)
