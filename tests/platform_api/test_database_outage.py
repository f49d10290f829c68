"""PostgreSQL restarted during traffic: the API answers 503 with Retry-After while the server
is down, recovers by itself when it is back, and every write it acknowledged is there.

The test runs a PostgreSQL server of its own (initdb in a temporary directory, on a free
port; as the ``postgres`` user when the tests run as root) so that it can stop and start it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import get_engine, migrate, session_scope
from platform_api.services.tokens import create_token
from switchyard.app import create_app
from tests.conftest import free_port
from tests.platform_api.factories import bearer

pytestmark = pytest.mark.db


def _binary(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None
    )
    if found is None:
        pytest.fail(f"PostgreSQL's {name} is not installed (the machine's PostgreSQL provides it)")
    return found


class PostgresServer:
    """A throwaway PostgreSQL cluster that can be stopped and started again."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="switchyard-pg-"))
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.dir, "postgres")
        self._run(_binary("initdb"), "-D", str(self.dir / "data"), "-U", "postgres",
                  "-A", "trust", "--no-sync")  # fmt: skip

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        subprocess.run([*self.as_user, *argv], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(_binary("pg_ctl"), "-D", str(self.dir / "data"), "-o", options,
                  "-l", str(self.dir / "server.log"), "-w", "start")  # fmt: skip

    def stop(self) -> None:
        """A clean fast shutdown: every session is ended, new connections are refused."""
        self._run(_binary("pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def private_postgres(
    _test_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    monkeypatch.setenv("DATABASE_URL", server.url)
    get_settings.cache_clear()
    migrate(get_settings())
    yield server
    get_engine(get_settings()).dispose()
    get_settings.cache_clear()
    with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
        server.stop()
    server.remove()


def test_the_api_answers_503_while_postgres_restarts_and_loses_no_acknowledged_write(
    private_postgres: PostgresServer,
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

        private_postgres.stop()
        during = []
        for n in range(5, 10):
            response = api.post("/v1/webhook", json={"target_url": f"https://h.example/{n}"},
                                headers=headers)  # fmt: skip
            during.append(response.status_code)
            if response.status_code == 503:
                assert response.json()["error"] == "SERVICE_UNAVAILABLE"
                assert int(response.headers["retry-after"]) > 0
        assert set(during) == {503}, during  # the token check itself needs the database

        private_postgres.start()  # back; the service was not restarted
        after = [write(api, n) for n in range(10, 15)]
        assert after == [201] * 5

        listed = api.get("/v1/webhook", params={"limit": 200}, headers=headers).json()["result"]
        assert sorted(w["id"] for w in listed) == sorted(acknowledged)
        assert len(acknowledged) == 10
