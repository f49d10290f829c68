"""A NUL character in an id, a filter or a body string is the caller's error on every database:
PostgreSQL cannot store or compare one, and answers 400 naming the character; SQLite can,
and answers as for any unknown id (404, or an empty list). Never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

pytestmark = pytest.mark.db

REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/v1/sync-job/a%00b", {}),
    ("GET", "/v1/webhook/a%00b", {}),
    ("GET", "/v1/integrated-account/a%00b", {}),
    ("GET", "/v1/sync-job-run", {"params": {"sync_job_id": "a\x00b"}}),
    ("GET", "/v1/integrated-account", {"params": {"tenant_id": "a\x00b"}}),
    ("POST", "/v1/webhook/test", {"json": {"id": "a\x00b"}}),
    ("POST", "/v1/link-token", {"json": {"integrated_account_id": "a\x00b"}}),
    ("POST", "/v1/sync-job-run", {"json": {"sync_job_id": "a\x00b", "integrated_account_id": "x"}}),
]


@pytest.mark.parametrize(("method", "path", "extra"), REQUESTS, ids=lambda v: str(v)[:40])
def test_a_nul_character_is_a_client_error(
    client: TestClient,
    auth_headers: dict[str, str],
    method: str,
    path: str,
    extra: dict[str, Any],
) -> None:
    answer = client.request(method, path, headers=auth_headers, **extra)
    if answer.status_code == 200:  # a filter that matches nothing (SQLite)
        assert answer.json()["result"] == []
        return
    assert answer.status_code in (400, 404), answer.text
    body = answer.json()
    assert set(body) == {"error", "message", "request_id"}
    if body["error"] == "INVALID_REQUEST" and "NUL" in body["message"]:
        assert "\x00" not in body["message"]
