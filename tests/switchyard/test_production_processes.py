"""`switchyard run` in production mode leaves the sandbox (a development demo upstream) out,
and its summary says so."""

from __future__ import annotations

from typing import Literal

import pytest

from core.settings import Settings
from switchyard.processes import service_processes
from switchyard.supervisor import Supervisor

ENV = {
    "DATABASE_URL": "sqlite:///x.db",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "RAY_ADDRESS": "127.0.0.1:6380",
}


def _settings(mode: Literal["development", "production"]) -> Settings:
    return Settings(mode=mode, workers_webhooks=0, workers_sync=0, workers_housekeeping=0)


def test_production_mode_starts_no_sandbox() -> None:
    names = {spec.name for spec in service_processes(_settings("production"))}
    assert names == {"api", "scheduler", "dispatcher"}


def test_development_mode_starts_the_sandbox() -> None:
    assert "sandbox" in {spec.name for spec in service_processes(_settings("development"))}


def _summary_rows(
    mode: Literal["development", "production"], capsys: pytest.CaptureFixture[str]
) -> dict[str, str]:
    supervisor = Supervisor(_settings(mode))
    # Set by the start-up steps the summary follows.
    supervisor.dashboard_url = supervisor.first_token = None
    supervisor._print_summary([], ENV)
    printed = capsys.readouterr().err
    return {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in printed.splitlines()
        if line.count("│") >= 3
    }


def test_the_summary_says_the_sandbox_is_not_started_in_production(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    rows = _summary_rows("production", capsys)
    assert rows["sandbox"].startswith("not started: SWITCHYARD_MODE=production")
    assert "sandbox" not in _summary_rows("development", capsys)
