"""PostgreSQL lost during traffic: the API answers 503 with Retry-After while it is gone,
recovers by itself when it is back, and every write it acknowledged is there.

The service reaches the machine's PostgreSQL (127.0.0.1:5432, a database of this test's own)
through a TCP relay; the relay going down drops every connection and refuses new ones, which
is what a restart of the server looks like from the service.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import get_engine, migrate, session_scope
from platform_api.services.tokens import create_token
from switchyard.app import create_app
from tests.conftest import free_port
from tests.platform_api.core_helpers import bearer

pytestmark = pytest.mark.db

POSTGRES = ("127.0.0.1", 5432)


class Relay:
    """Forwards 127.0.0.1:<port> to PostgreSQL until stopped; can be started again."""

    def __init__(self) -> None:
        self.port = free_port()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Refuse new connections and cut every open one."""
        with self._lock:
            if self._listener is not None:
                # shutdown, not just close: a thread blocked in accept() keeps it listening.
                with contextlib.suppress(OSError):
                    self._listener.shutdown(socket.SHUT_RDWR)
                self._listener.close()
                self._listener = None
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(POSTGRES)
            with self._lock:
                self._sockets += [client, server]
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


@pytest.fixture
def postgres_behind_relay(
    _test_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Relay]:
    name = f"switchyard_outage_{os.getpid()}"
    admin = sa.create_engine(
        "postgresql://postgres@127.0.0.1:5432/postgres", isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    relay = Relay()
    relay.start()
    monkeypatch.setenv("DATABASE_URL", f"postgresql://postgres@127.0.0.1:{relay.port}/{name}")
    get_settings.cache_clear()
    migrate(get_settings())
    yield relay
    relay.stop()
    get_engine(get_settings()).dispose()
    get_settings.cache_clear()
    with admin.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_the_api_answers_503_while_postgres_is_gone_and_loses_no_acknowledged_write(
    postgres_behind_relay: Relay,
) -> None:
    settings = get_settings()
    with session_scope(settings) as session:
        _, secret = create_token(session, environment="development", name="outage")
    headers = bearer(secret)
    acknowledged: list[str] = []

    def write(api: TestClient, n: int) -> int:
        body = {"target_url": f"https://hooks.example.com/outage/{n}"}
        response = api.post("/v1/webhook", json=body, headers=headers)
        if response.status_code == 201:
            acknowledged.append(response.json()["id"])
        return response.status_code

    with TestClient(create_app(settings), raise_server_exceptions=False) as api:
        assert [write(api, n) for n in range(5)] == [201] * 5

        postgres_behind_relay.stop()
        during = []
        for n in range(5, 10):
            response = api.post("/v1/webhook", json={"target_url": f"https://h.example/{n}"},
                                headers=headers)  # fmt: skip
            during.append(response.status_code)
            if response.status_code == 503:
                assert response.json()["error"] == "SERVICE_UNAVAILABLE"
                assert int(response.headers["retry-after"]) > 0
        assert set(during) == {503}, during  # the token check itself needs the database

        postgres_behind_relay.start()  # back; the service was not restarted
        after = [write(api, n) for n in range(10, 15)]
        assert after == [201] * 5

        listed = api.get("/v1/webhook", params={"limit": 200}, headers=headers).json()["result"]
        assert sorted(w["id"] for w in listed) == sorted(acknowledged)
        assert len(acknowledged) == 10
