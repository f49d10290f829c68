"""`switchyard tokens revoke` tells the truth: a revocation Redis did not take (so the fronts'
caches still hold the token) is a warning and a non-zero exit, and running the command again
once Redis answers finishes it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from core.settings import Settings, get_settings
from platform_api.cli.tokens import EXIT_NOT_ANNOUNCED
from platform_api.db import session_scope
from platform_api.services.tokens import cache_lag_s, create_token, revoke_token
from platform_api.tables.api_token import ApiToken
from switchyard.cli import app as cli
from tests.assertions import assert_error
from tests.conftest import free_port
from tests.platform_api.factories import bearer

pytestmark = pytest.mark.db

runner = CliRunner()
PROBE = "/v1/integrated-account"


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    yield
    get_settings.cache_clear()


def _token() -> tuple[str, str]:
    with session_scope(get_settings()) as session:
        token, secret = create_token(session, environment="development")
        return token.id, secret


def _revoked_in_database(token_id: str) -> bool:
    with session_scope(get_settings()) as session:
        token = session.get(ApiToken, token_id)
        assert token is not None
        return token.revoked_at is not None


def _redis_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's Redis refuses connections (the front keeps its own, working one)."""
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    get_settings.cache_clear()


def test_revoke_stops_the_token_at_once(client: TestClient) -> None:
    token_id, secret = _token()
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200  # cached as valid
    result = runner.invoke(cli, ["tokens", "revoke", token_id])
    assert result.exit_code == 0, result.output
    assert f"revoked {token_id}" in result.stdout
    assert_error(client.get(PROBE, headers=bearer(secret)), 401, "UNAUTHORIZED")


def test_a_revoke_redis_did_not_take_warns_exits_non_zero_and_can_be_finished(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_id, secret = _token()
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200  # cached as valid
    _redis_down(monkeypatch)

    result = runner.invoke(cli, ["tokens", "revoke", token_id])

    assert result.exit_code == EXIT_NOT_ANNOUNCED != 0
    assert f"revoked {token_id}" not in result.stdout
    warning = result.stderr
    assert "Redis did not answer" in warning
    assert f"up to {cache_lag_s(settings)} s" in warning
    assert f"switchyard tokens revoke {token_id}" in warning  # how to finish
    assert _revoked_in_database(token_id)  # the revocation itself is committed
    # What the warning is about: the front still answers from its cache.
    assert client.get(PROBE, headers=bearer(secret)).status_code == 200

    monkeypatch.undo()  # Redis answers again
    get_settings.cache_clear()
    again = runner.invoke(cli, ["tokens", "revoke", token_id])
    assert again.exit_code == 0, again.output
    assert_error(client.get(PROBE, headers=bearer(secret)), 401, "UNAUTHORIZED")


def test_the_revocation_says_whether_redis_took_it(
    settings: Settings, redis_client: redis.Redis, db: None
) -> None:
    down = redis.Redis(host="127.0.0.1", port=free_port())
    for cache, announced in ((down, False), (redis_client, True)):
        token_id, _ = _token()
        with session_scope(settings) as session:
            revocation = revoke_token(session, token_id=token_id, cache=cache, settings=settings)
            assert not revocation.announced  # nothing is told before the commit
        assert revocation.announced is announced
        assert _revoked_in_database(token_id)
