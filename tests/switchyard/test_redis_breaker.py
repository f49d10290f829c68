"""Redis that accepts connections but never answers (packets dropped): the front's token
check times out once, the breaker opens, and requests go to the database without asking
Redis until the cooldown has passed; then one request tries Redis again."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.redis_breaker import CircuitBreaker
from switchyard.app import create_app
from tests.platform_api.factories import bearer

pytestmark = pytest.mark.db


class Blackhole:
    """A TCP server that takes connections and reads, and never writes a byte back."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.held.append(conn)

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def blackhole() -> Iterator[Blackhole]:
    hole = Blackhole()
    yield hole
    hole.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_silent_redis_is_asked_once_per_cooldown(
    blackhole: Blackhole, make_token: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = bearer(make_token("development"))  # written while the real Redis is in use
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{blackhole.port}/0")
    monkeypatch.setenv("SWITCHYARD_REDIS_TIMEOUT_S", "0.2")
    # The token check alone talks to Redis here (no revocation subscription or shadow record
    # beside it).
    monkeypatch.setenv("SWITCHYARD_AUTH_LOCAL_CACHE_S", "0")
    monkeypatch.setenv("SWITCHYARD_INFERENCE_SHADOW_FOLLOW", "false")
    get_settings.cache_clear()
    app = create_app(get_settings())
    clock = Clock()
    app.state.redis_breaker = CircuitBreaker(30, clock=clock)
    try:
        with TestClient(app) as api:
            for _ in range(10):
                assert api.get("/v1/integration", headers=headers).status_code == 200
            assert blackhole.connections == 1  # the first request's timeout opened it
            assert app.state.redis_breaker.opened == 1

            clock.now += 31  # cooldown over: one request tries Redis again, and fails
            assert api.get("/v1/integration", headers=headers).status_code == 200
            assert api.get("/v1/integration", headers=headers).status_code == 200
            assert blackhole.connections == 2
            assert app.state.redis_breaker.opened == 2

            unknown = api.get("/v1/integration", headers=bearer("sy_not-a-token"))
            assert unknown.status_code == 401  # the database still says no
    finally:
        get_settings.cache_clear()
