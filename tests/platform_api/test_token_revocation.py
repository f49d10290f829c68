"""Revocation is immediate, even for a request that raced it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlmodel import Session

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services import tokens
from platform_api.services.tokens import Principal, create_token, revoke_token
from tests.assertions import assert_error
from tests.platform_api.factories import bearer

pytestmark = pytest.mark.db

PROBE = "/v1/integrated-account"


def test_a_lookup_racing_the_revocation_cannot_cache_the_token_again(
    client: TestClient, app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The racing request reads the token from the database just before the revocation
    commits, and writes its (stale, valid) answer to the cache just after."""
    with session_scope(get_settings()) as session:
        token, secret = create_token(session, environment="development")
    real_lookup = tokens.lookup_principal
    raced: list[str] = []

    def lookup_then_revoke(
        session_factory: Callable[[], AbstractContextManager[Session]], digest: str, now: datetime
    ) -> Principal | None:
        principal = real_lookup(session_factory, digest, now)  # still valid here
        if not raced:
            raced.append(token.id)
            settings = get_settings()
            with session_scope(settings) as session:
                revoke_token(session, token_id=token.id, cache=app.state.redis, settings=settings)
        return principal

    monkeypatch.setattr(tokens, "lookup_principal", lookup_then_revoke)
    # Nothing cached yet: this request goes to the database and races the revocation. It
    # read the token before the commit, so it may pass; what matters is what it leaves.
    client.get(PROBE, headers=bearer(secret))
    assert raced == [token.id]
    monkeypatch.setattr(tokens, "lookup_principal", real_lookup)
    for _ in range(3):
        assert_error(client.get(PROBE, headers=bearer(secret)), 401, "UNAUTHORIZED")


def test_the_cache_entry_is_dropped_only_after_the_commit(
    client: TestClient, app: FastAPI, redis_client: redis.Redis
) -> None:
    with session_scope(get_settings()) as session:
        token, secret = create_token(session, environment="development")
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200  # cached as valid
    key = f"auth:token:{token.token_hash}"
    settings = get_settings()
    with session_scope(settings) as session:
        revoke_token(session, token_id=token.id, cache=app.state.redis, settings=settings)
        # Not committed yet: a request now still reads the committed (valid) state, so the
        # entry is left alone until the commit.
        assert redis_client.get(key) not in (None, b"null")
    assert redis_client.get(key) == b"null"
    assert 0 < redis_client.ttl(key) <= app.state.settings.auth_cache_seconds
    assert_error(client.get(PROBE, headers=bearer(secret)), 401, "UNAUTHORIZED")


def test_a_rolled_back_revocation_leaves_the_token_working(
    client: TestClient, app: FastAPI
) -> None:
    with session_scope(get_settings()) as session:
        token, secret = create_token(session, environment="development")
    settings = get_settings()
    with pytest.raises(RuntimeError), session_scope(settings) as session:
        revoke_token(session, token_id=token.id, cache=app.state.redis, settings=settings)
        raise RuntimeError("the transaction fails")
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200
