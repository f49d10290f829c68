"""Connection passwords are never printed; /metrics can require a token."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from core.redaction import redact_url
from core.settings import Settings, get_settings
from switchyard import supervisor
from switchyard.processes import ProcessSpec
from tests.assertions import assert_error

SECRET = "s3cr3t-pa55"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://:{SECRET}@cache:6379/0", "redis://:***@cache:6379/0"),
        (f"rediss://app:{SECRET}@cache:6380", "rediss://app:***@cache:6380"),
        (f"redis://{SECRET}@cache", "redis://***@cache"),
        (f"postgresql://app:{SECRET}@db:5432/app", "postgresql://app:***@db:5432/app"),
        (f"postgresql://app@db/app?password={SECRET}&sslmode=require", None),
        ("unix:///tmp/redis.sock?db=0", "unix:///tmp/redis.sock?db=0"),
        ("sqlite:////var/lib/switchyard.db", "sqlite:////var/lib/switchyard.db"),
    ],
)
def test_passwords_are_redacted(url: str, shown: str | None) -> None:
    redacted = redact_url(url)
    assert SECRET not in redacted
    if shown is not None:
        assert redacted == shown


def test_settings_repr_hides_connection_secrets() -> None:
    settings = Settings(
        database_url=f"postgresql://app:{SECRET}@db/app",
        redis_url=f"redis://:{SECRET}@cache",
        encryption_key=SECRET,
        metrics_token=SECRET,
    )
    assert SECRET not in repr(settings) and SECRET not in str(settings)


def test_the_run_summary_prints_neither_password(capsys: pytest.CaptureFixture[str]) -> None:
    runner = supervisor.Supervisor(Settings())
    child = subprocess.Popen(["true"])
    child.wait()
    runner.children = {"api": child}
    runner.dashboard_url = None
    runner.first_token = None
    env = {
        "DATABASE_URL": f"postgresql://app:{SECRET}@db/app",
        "REDIS_URL": f"redis://:{SECRET}@cache:6379/0",
        "RAY_ADDRESS": "auto",
    }
    supervisor.console.width = 200
    runner._print_summary([ProcessSpec("api", ["x"], listens_on="http://h/v1")], env)
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    assert "redis://:***@cache:6379/0" in out + err


@pytest.fixture
def metrics_settings(
    _test_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    monkeypatch.setenv("SWITCHYARD_METRICS_TOKEN", SECRET)
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


@pytest.mark.db
def test_metrics_behind_a_token(metrics_settings: Settings, db: None) -> None:
    from switchyard.app import create_app

    with TestClient(create_app(metrics_settings)) as client:
        assert_error(client.get("/metrics"), 401, "UNAUTHORIZED")
        wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert_error(wrong, 401, "UNAUTHORIZED")
        right = client.get("/metrics", headers={"Authorization": f"Bearer {SECRET}"})
        assert right.status_code == 200 and "http_requests" in right.text


@pytest.mark.db
def test_metrics_open_without_a_token(client: TestClient) -> None:
    assert client.get("/metrics").status_code == 200
