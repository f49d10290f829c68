"""A webhook aimed at a name that resolves to an internal address: the delivery log says the
host is not allowed, and never shows the address (what a probing caller wants to learn)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.platform_api.webhooks.conftest import create_webhook, deliveries, emit, settled

pytestmark = pytest.mark.db

INTERNAL_ADDRESS = "10.0.0.5"


def test_the_delivery_log_names_the_host_but_not_its_internal_address(
    client: TestClient,
    auth_headers: dict[str, str],
    pump: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def internal(
        self: asyncio.BaseEventLoop, host: str, port: int, *args: Any, **kwargs: Any
    ) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (INTERNAL_ADDRESS, port))]

    hook = create_webhook(client, auth_headers, "https://hooks.example.com/in")
    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", internal)
    emit()
    pump(settled(client, auth_headers, hook["id"]))

    [delivery] = deliveries(client, auth_headers, hook["id"])
    errors = [attempt["error"] for attempt in delivery["attempts"]]
    assert errors and all("hooks.example.com is not allowed" in error for error in errors)
    assert not any(INTERNAL_ADDRESS in error for error in errors)
