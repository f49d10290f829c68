"""A front remembers token checks in-process, and forgets a token the moment it is revoked,
whichever process revokes it; without its revocation subscription it remembers nothing."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.services import tokens
from platform_api.services.token_cache import LocalTokenCache
from platform_api.services.tokens import create_token, revoke_token
from switchyard.app import create_app
from tests.assertions import assert_error
from tests.platform_api.factories import bearer
from tests.platform_api.processes import wait_until

pytestmark = pytest.mark.db

PROBE = "/v1/integrated-account"


@pytest.fixture
def long_memory(settings: Settings, db: None) -> Iterator[tuple[FastAPI, TestClient]]:
    """A front that would remember a token for a minute: only a revocation message can make
    it forget sooner."""
    app = create_app(settings.model_copy(update={"auth_local_cache_s": 60}))
    with TestClient(app) as client:
        wait_until(lambda: app.state.token_cache.live, timeout=10)
        yield app, client


@pytest.fixture
def shared_lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the token checks that went to Redis (or the database)."""
    calls: list[str] = []
    real = tokens._authenticate_shared

    async def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        return await real(*args, **kwargs)

    monkeypatch.setattr(tokens, "_authenticate_shared", counting)
    return calls


def _token(settings: Settings) -> tuple[str, str]:
    with session_scope(settings) as session:
        token, secret = create_token(session, environment="development")
        return token.id, secret


@pytest.fixture
def remembered(
    long_memory: tuple[FastAPI, TestClient], settings: Settings
) -> tuple[FastAPI, TestClient, str, str]:
    """A token the long-memory front has checked once: ``(app, client, token id, secret)``."""
    app, client = long_memory
    token_id, secret = _token(settings)
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200
    return app, client, token_id, secret


def test_a_remembered_token_is_checked_without_a_round_trip(
    long_memory: tuple[FastAPI, TestClient], settings: Settings, shared_lookups: list[str]
) -> None:
    _, client = long_memory
    _, secret = _token(settings)
    for _ in range(5):
        assert client.get(PROBE, headers=bearer(secret)).status_code == 200
    assert len(shared_lookups) == 1
    for _ in range(3):  # an unknown secret is remembered as unknown
        assert_error(client.get(PROBE, headers=bearer("sy_unknown")), 401, "UNAUTHORIZED")
    assert len(shared_lookups) == 2


def test_a_revocation_in_this_process_is_immediate(
    remembered: tuple[FastAPI, TestClient, str, str], settings: Settings
) -> None:
    app, client, token_id, secret = remembered
    with session_scope(settings) as session:
        revoke_token(session, token_id=token_id, cache=app.state.redis, settings=settings)
    assert_error(client.get(PROBE, headers=bearer(secret)), 401, "UNAUTHORIZED")


def test_a_revocation_in_another_process_reaches_the_front(
    remembered: tuple[FastAPI, TestClient, str, str],
) -> None:
    _, client, token_id, secret = remembered
    revoke = textwrap.dedent(f"""
        from core.settings import get_settings
        from platform_api.db import session_scope
        from platform_api.queueing.queues import get_redis
        from platform_api.services.tokens import revoke_token
        settings = get_settings()
        with session_scope(settings) as session:
            revoke_token(
                session, token_id={token_id!r}, cache=get_redis(settings), settings=settings
            )
    """)
    subprocess.run([sys.executable, "-c", revoke], check=True, env=os.environ.copy())
    # Well within the minute the front would otherwise remember the token.
    wait_until(lambda: client.get(PROBE, headers=bearer(secret)).status_code == 401, timeout=10)


def test_nothing_is_remembered_without_the_revocation_subscription(
    settings: Settings, db: None, shared_lookups: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def never_subscribed(self: LocalTokenCache, redis_url: str) -> None:
        await asyncio.Event().wait()  # as when Redis cannot be reached

    monkeypatch.setattr(LocalTokenCache, "listen", never_subscribed)
    app = create_app(settings.model_copy(update={"auth_local_cache_s": 60}))
    _, secret = _token(settings)
    with TestClient(app) as client:
        for _ in range(3):
            assert client.get(PROBE, headers=bearer(secret)).status_code == 200
        assert not app.state.token_cache.live
    assert len(shared_lookups) == 3
