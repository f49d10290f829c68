"""Fixtures of the unified-API tests: a provider fake on loopback with an account on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import ServerThread
from tests.platform_api.unified.fakes.common import FakeState
from tests.platform_api.unified.helpers import make_account
from tests.platform_api.unified.providers import Provider


@dataclass
class Upstream:
    provider: Provider
    data: Any
    state: FakeState
    url: str
    account_id: str


# What the ``upstream_for`` fixture hands a test: ``upstream_for(provider, **account)``.
UpstreamFor = Callable[..., Upstream]


@pytest.fixture
def upstream_for(db: None) -> Iterator[UpstreamFor]:
    """Start a provider's fake and connect an account to it: ``upstream_for(provider)``."""
    servers: list[ServerThread] = []

    def start(provider: Provider, **account: Any) -> Upstream:
        data = provider.build()
        app, state = provider.serve(data)
        server = ServerThread(app).__enter__()
        servers.append(server)
        account_id = make_account(
            provider.integration, provider.credentials, base_url=server.url, **account
        )
        return Upstream(provider, data, state, server.url, account_id)

    yield start
    for server in servers:
        server.__exit__(None, None, None)
