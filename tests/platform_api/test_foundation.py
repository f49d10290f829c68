"""Health checks, request ids, the error shape and API-token authentication."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from fastapi import APIRouter, Depends, FastAPI
from fastapi.testclient import TestClient

from core.settings import Settings, get_settings
from platform_api.api.deps import CurrentPrincipal, require_principal
from platform_api.db import session_scope
from platform_api.services.tokens import create_token, revoke_token
from switchyard.app import create_app
from tests.assertions import assert_error
from tests.conftest import free_port

pytestmark = pytest.mark.db


def _with_probe(app: FastAPI) -> FastAPI:
    """The app plus one authenticated route that echoes the caller and one that fails."""
    probe = APIRouter()

    @probe.get("/probe")
    def whoami(principal: CurrentPrincipal) -> dict[str, str]:
        return {"environment_id": principal.environment_id, "token_id": principal.token_id}

    @probe.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    app.include_router(probe, prefix="/v1", dependencies=[Depends(require_principal)])
    return app


@pytest.fixture
def probe_client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(_with_probe(app), raise_server_exceptions=False) as client:
        yield client


def test_healthz_answers_without_auth(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["x-request-id"].startswith("req_")


def test_readyz_reports_database_and_redis(client: TestClient) -> None:
    checks = client.get("/readyz").json()["checks"]
    assert checks["database"] is True
    assert checks["redis"] is True


def test_request_id_from_caller_is_echoed(client: TestClient) -> None:
    response = client.get("/v1/no-such-thing", headers={"X-Request-ID": "trace-1234abcd"})
    body = assert_error(response, 404, "NOT_FOUND")
    assert body["request_id"] == "trace-1234abcd"


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Basic abc", "Bearer sy_unknown_token_value", "Bearer two words"],
    ids=["missing", "empty", "wrong-scheme", "unknown", "malformed"],
)
def test_bad_credentials_are_unauthorized(probe_client: TestClient, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    assert_error(probe_client.get("/v1/probe", headers=headers), 401, "UNAUTHORIZED")


def test_valid_token_is_scoped_to_its_environment(
    probe_client: TestClient, make_token: Callable[..., str]
) -> None:
    secret = make_token("staging")
    response = probe_client.get("/v1/probe", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200
    assert response.json()["environment_id"] == "staging"


def test_revoked_token_stops_working_at_once(probe_client: TestClient, app: FastAPI) -> None:
    with session_scope(get_settings()) as session:
        token, secret = create_token(session, environment="development")
    headers = {"Authorization": f"Bearer {secret}"}
    assert probe_client.get("/v1/probe", headers=headers).status_code == 200  # now cached
    settings = get_settings()
    with session_scope(settings) as session:
        revoke_token(session, token_id=token.id, cache=app.state.redis, settings=settings)
    assert_error(probe_client.get("/v1/probe", headers=headers), 401, "UNAUTHORIZED")


def test_expired_token_is_unauthorized(probe_client: TestClient) -> None:
    with session_scope(get_settings()) as session:
        token, secret = create_token(
            session, environment="development", expires_in=timedelta(seconds=1)
        )
        token.expires_at = token.created_at - timedelta(seconds=5)
    headers = {"Authorization": f"Bearer {secret}"}
    assert_error(probe_client.get("/v1/probe", headers=headers), 401, "UNAUTHORIZED")


def test_tokens_are_stored_only_as_hashes(make_token: Callable[..., str]) -> None:
    from sqlmodel import select

    from platform_api.tables.api_token import ApiToken

    secret = make_token("production")
    with session_scope(get_settings()) as session:
        rows = session.exec(select(ApiToken)).all()
    assert rows and all(secret not in (r.token_hash, r.prefix, r.name) for r in rows)
    assert len(secret) >= 40


def test_unexpected_error_is_500_without_traceback(
    probe_client: TestClient, auth_headers: dict[str, str]
) -> None:
    body = assert_error(probe_client.get("/v1/boom", headers=auth_headers), 500, "INTERNAL_ERROR")
    assert "secret internals" not in body["message"]
    assert "Traceback" not in body["message"]


def test_tokens_still_authenticate_while_redis_is_down(
    settings: Settings, db: None, auth_headers: dict[str, str]
) -> None:
    dead_redis = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    with TestClient(_with_probe(create_app(dead_redis)), raise_server_exceptions=False) as client:
        response = client.get("/v1/probe", headers=auth_headers)
        assert response.status_code == 200, response.text
        unknown = client.get("/v1/probe", headers={"Authorization": "Bearer sy_nope"})
        assert_error(unknown, 401, "UNAUTHORIZED")
