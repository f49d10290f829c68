"""A full tour of the platform, then a search for every secret it created in everything it
said: response bodies, log lines, API-log rows, outbox events and delivered webhooks.

Each secret may appear exactly where it is handed out (a token's secret in the response that
creates it) and nowhere else. Steps are plain functions in ``TOUR``: a new feature adds its
step there and whatever secrets it creates to ``tour.secrets``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import redis
from fastapi.testclient import TestClient
from rq import SimpleWorker
from rq.serializers import JSONSerializer
from sqlalchemy import text
from typer.testing import CliRunner

from core.settings import Settings, get_settings
from platform_api.db import get_engine, session_scope
from platform_api.queueing.queues import SYNC, WEBHOOKS, get_queue
from platform_api.services.tokens import create_token
from platform_api.webhooks.dispatcher import dispatch_once
from sandbox import app as sandbox_app
from switchyard.cli import app as cli
from tests.conftest import ServerThread
from tests.platform_api.webhooks.receiver import Receiver

pytestmark = [pytest.mark.db, pytest.mark.slow]

PROVIDER_KEY = "sk_sandbox_TourProviderKey9f3a"
WRONG_PROVIDER_KEY = "sk_sandbox_revoked"  # the sandbox refuses it: the error paths run too


@dataclass
class Tour:
    client: TestClient
    settings: Settings
    receiver: Receiver
    redis: redis.Redis
    # name -> secret value; every one is searched for afterwards.
    secrets: dict[str, str] = field(default_factory=dict)
    # (label, text, secrets this text may legitimately show)
    said: list[tuple[str, str, set[str]]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    def call(
        self, method: str, url: str, *, shows: Set[str] = frozenset(), **kwargs: Any
    ) -> httpx.Response:
        response = self.client.request(method, url, **kwargs)
        self.said.append((f"{method} {url} -> {response.status_code}", response.text, set(shows)))
        self.said.append((f"{method} {url} headers", str(dict(response.headers)), set()))
        return response

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secrets['api_token']}"}

    def pump(self, until: Callable[[], bool], timeout: float = 20.0) -> None:
        queue = get_queue(WEBHOOKS, self.redis)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dispatch_once(get_settings(), self.redis)
            worker = SimpleWorker([queue], connection=self.redis, serializer=JSONSerializer)
            worker.work(burst=True, logging_level="WARNING")
            if until():
                return
            time.sleep(0.05)
        raise AssertionError("webhook deliveries did not arrive in time")


def step_tokens(tour: Tour) -> None:
    with session_scope(get_settings()) as session:
        token, secret = create_token(session, environment="development", name="tour")
    tour.secrets["api_token"] = secret
    listed = CliRunner().invoke(cli, ["tokens", "list"], terminal_width=200)
    tour.said.append(("switchyard tokens list", listed.output, set()))
    tour.state["token_id"] = token.id


def step_webhooks(tour: Tour) -> None:
    created = tour.call(
        "POST",
        "/v1/webhook",
        json={"target_url": tour.receiver.url("tour")},
        headers=tour.auth,
    )
    assert created.status_code == 201, created.text
    tour.secrets["webhook_secret"] = created.json()["secret"]
    tour.said[-2] = (tour.said[-2][0], tour.said[-2][1], {"webhook_secret"})  # shown once
    tour.state["webhook_id"] = created.json()["id"]
    tour.call("GET", f"/v1/webhook/{created.json()['id']}", headers=tour.auth)
    tour.call("GET", "/v1/webhook", headers=tour.auth)


def step_link(tour: Tour) -> None:
    installed = tour.call(
        "POST",
        "/v1/environment-integration",
        json={"integration_name": "sandbox"},
        headers=tour.auth,
    )
    assert installed.status_code == 201, installed.text
    created = tour.call("POST", "/v1/link-token", json={"tenant_id": "tour"}, headers=tour.auth)
    assert created.status_code == 201, created.text
    tour.secrets["link_token"] = created.json()["link_token"]
    tour.said[-2] = (tour.said[-2][0], tour.said[-2][1], {"link_token"})  # handed out here
    tour.call("GET", "/connect-account/session", params={"link_token": tour.secrets["link_token"]})


def step_connect(tour: Tour) -> None:
    tour.secrets["provider_key"] = PROVIDER_KEY
    refused = tour.call(
        "POST",
        "/connect-account/session",
        json={
            "link_token": tour.secrets["link_token"],
            "integration_name": "sandbox",
            "credentials": {"api_key": PROVIDER_KEY, "unexpected": PROVIDER_KEY},
        },
    )
    assert refused.status_code == 400, refused.text
    connected = tour.call(
        "POST",
        "/connect-account/session",
        json={
            "link_token": tour.secrets["link_token"],
            "integration_name": "sandbox",
            "credentials": {"api_key": PROVIDER_KEY},
        },
    )
    assert connected.status_code == 201, connected.text
    account_id = connected.json()["integrated_account_id"]
    tour.state["account_id"] = account_id
    tour.call("GET", f"/v1/integrated-account/{account_id}", headers=tour.auth)
    tour.call("GET", "/v1/integrated-account", headers=tour.auth)


def step_unified(tour: Tour) -> None:
    params = {"integrated_account_id": tour.state["account_id"]}
    listed = tour.call("GET", "/v1/unified/wms/orders", params=params, headers=tour.auth)
    # Records came back: the provider key really went to the sandbox.
    assert listed.status_code == 200 and listed.json()["result"], listed.text
    tour.call("GET", "/v1/unified/wms/orders/missing", params=params, headers=tour.auth)
    tour.call("POST", "/v1/unified/wms/orders", params=params, json={"x": 1}, headers=tour.auth)


def step_proxy(tour: Tour) -> None:
    params = {"integrated_account_id": tour.state["account_id"]}
    proxied = tour.call("GET", "/v1/proxy/store/orders", params=params, headers=tour.auth)
    assert proxied.status_code == 200, proxied.text
    tour.call("GET", "/v1/proxy/nowhere", params=params, headers=tour.auth)


def step_sync(tour: Tour) -> None:
    """A sync job run by a worker: its run record, events and cache are searched too."""
    job = tour.call(
        "POST",
        "/v1/sync-job",
        json={"integration_name": "sandbox", "resources": [
            {"resource": "wms/orders"}, {"resource": "wms/returns"}]},
        headers=tour.auth,
    ).json()  # fmt: skip
    body = {"sync_job_id": job["id"], "integrated_account_id": tour.state["account_id"],
            "webhook_id": tour.state["webhook_id"]}  # fmt: skip
    run = tour.call("POST", "/v1/sync-job-run", json=body, headers=tour.auth).json()
    queue = get_queue(SYNC, tour.redis)
    SimpleWorker([queue], connection=tour.redis, serializer=JSONSerializer).work(burst=True)
    done = tour.call("GET", f"/v1/sync-job-run/{run['id']}", headers=tour.auth).json()
    assert done["status"] == "completed", done
    params = {"integrated_account_id": tour.state["account_id"]}
    cached = tour.call("GET", "/v1/unified_cache/returns", params=params, headers=tour.auth)
    assert cached.json()["result"], cached.text


def step_provider_refusal(tour: Tour) -> None:
    """A reauthorization with credentials the provider refuses: the credential check's
    refusal (nothing stored), and the wrong key is in no log, row or event."""
    created = tour.call(
        "POST",
        "/v1/link-token",
        json={"integrated_account_id": tour.state["account_id"]},
        headers=tour.auth,
    )
    tour.secrets["reauth_link_token"] = created.json()["link_token"]
    tour.said[-2] = (tour.said[-2][0], tour.said[-2][1], {"reauth_link_token"})
    tour.secrets["wrong_provider_key"] = WRONG_PROVIDER_KEY
    refused = tour.call(
        "POST",
        "/connect-account/session",
        json={
            "link_token": tour.secrets["reauth_link_token"],
            "integration_name": "sandbox",
            "credentials": {"api_key": WRONG_PROVIDER_KEY},
        },
    )
    assert refused.status_code == 400 and refused.json()["error"] == "INVALID_CREDENTIALS"
    params = {"integrated_account_id": tour.state["account_id"]}
    still = tour.call("GET", "/v1/unified/wms/orders", params=params, headers=tour.auth)
    assert still.status_code == 200, "the refused reauthorization changed nothing"


def step_logs_and_events(tour: Tour) -> None:
    tour.call("GET", "/v1/api-log", headers=tour.auth)
    tour.pump(lambda: len(tour.receiver.received("tour")) >= 3)
    for index, arrived in enumerate(tour.receiver.received("tour")):
        tour.said.append((f"webhook delivery {index}", arrived.body.decode(), set()))
    tour.call("GET", f"/v1/webhook/{tour.state['webhook_id']}/deliveries", headers=tour.auth)
    with get_engine(tour.settings).connect() as connection:
        tables = ("api_log", "outbox_event", "webhook_delivery", "webhook_attempt",
                  "sync_job", "sync_job_run", "cached_return")  # fmt: skip
        for table in tables:
            rows = connection.execute(text(f"SELECT * FROM {table}")).fetchall()  # noqa: S608
            tour.said.append((f"table {table}", repr(rows), set()))


TOUR = [
    step_tokens,
    step_webhooks,
    step_link,
    step_connect,
    step_unified,
    step_proxy,
    step_sync,
    step_provider_refusal,
    step_logs_and_events,
]


@pytest.fixture
def settings(
    _test_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    with ServerThread(sandbox_app.create_app()) as sandbox:
        for key, value in {
            "SWITCHYARD_LOG_LEVEL": "DEBUG",
            "SWITCHYARD_SANDBOX_URL": sandbox.url,
            "SWITCHYARD_WEBHOOK_ALLOWED_HOSTS": '["127.0.0.1"]',
            "SWITCHYARD_WEBHOOK_RETRY_SCHEDULE": "[0, 0.2]",
            "SWITCHYARD_WEBHOOK_RETRY_JITTER": "0",
            "SWITCHYARD_WEBHOOK_DISPATCH_INTERVAL_SECONDS": "0.2",
        }.items():
            monkeypatch.setenv(key, value)
        get_settings.cache_clear()
        yield get_settings()
    get_settings.cache_clear()


def test_no_secret_appears_anywhere_but_where_it_is_handed_out(
    client: TestClient,
    settings: Settings,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    receiver = Receiver()
    with ServerThread(receiver.app) as hooks, caplog.at_level(logging.DEBUG):
        receiver.base_url = hooks.url
        tour = Tour(client=client, settings=settings, receiver=receiver, redis=redis_client)
        for step in TOUR:
            step(tour)
    out, err = capfd.readouterr()
    tour.said.append(("log records", caplog.text, set()))
    tour.said.append(("stdout", out, set()))
    tour.said.append(("stderr", err, set()))
    tour.secrets["encryption_key"] = settings.encryption_key or ""
    assert len(tour.said) > 40 and caplog.records, "the tour said too little to be a test"
    leaks = [
        f"{name} in {label}"
        for label, said, shows in tour.said
        for name, secret in tour.secrets.items()
        if secret and name not in shows and secret in said
    ]
    assert leaks == []
    # Each secret handed out was really shown where allowed (so the search can find one).
    shown = {name for _, said, shows in tour.said for name in shows if tour.secrets[name] in said}
    assert shown == {"webhook_secret", "link_token", "reauth_link_token"}
