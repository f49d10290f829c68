"""Fixtures of the platform's fault tests: real service processes and a private Redis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.settings import get_settings
from tests.platform_api.processes import Processes, RedisServer


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    yield procs
    procs.kill_all()


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
