"""Worker pools per queue class: which queues `switchyard worker --queues` serves, the
workers `switchyard run` starts for the configured counts, and what `status` says of a class
served on another machine. (The pools at work, with real processes:
tests/platform_api/sync/test_worker_pools.py.)"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.settings import Settings, get_settings
from platform_api.queueing.queues import ALL_QUEUES, QUEUE_CLASSES, UnknownQueue, resolve_queues
from switchyard.cli import app
from switchyard.processes import service_processes
from tests.conftest import free_port


@pytest.mark.parametrize(
    ("given", "served"),
    [
        ([], ALL_QUEUES),  # no option: every queue, in priority order
        (["webhooks"], ("webhooks",)),
        (["sync"], ("sync",)),
        (["housekeeping"], ("default",)),  # a class by name
        (["default"], ("default",)),  # a queue by name
        (["webhooks,sync"], ("webhooks", "sync")),  # comma-separated
        (["sync", "webhooks"], ("webhooks", "sync")),  # repeated; priority order kept
        (["sync, housekeeping", "default"], ("default", "sync")),  # spaces, and said twice
        (["housekeeping,webhooks,sync"], ALL_QUEUES),
    ],
)
def test_worker_serves_the_named_classes_and_queues_in_priority_order(
    given: list[str], served: tuple[str, ...]
) -> None:
    assert resolve_queues(given) == served


def test_every_queue_belongs_to_exactly_one_class() -> None:
    assert sorted(q for queues in QUEUE_CLASSES.values() for q in queues) == sorted(ALL_QUEUES)


@pytest.mark.parametrize("flag", ["--queues", "--queue", "-q"])
def test_worker_with_an_unknown_name_exits_2_naming_the_known_ones(flag: str) -> None:
    result = CliRunner().invoke(app, ["worker", flag, "webhooks,mail"])
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert "'mail'" in line
    for name in ("webhooks", "sync", "housekeeping", "default"):
        assert name in line
    with pytest.raises(UnknownQueue):
        resolve_queues(["mail"])


def _settings(webhooks: int, sync: int, housekeeping: int) -> Settings:
    return Settings(workers_webhooks=webhooks, workers_sync=sync, workers_housekeeping=housekeeping)


def _workers(settings: Settings) -> dict[str, list[str]]:
    """The worker processes `switchyard run` starts: name to `switchyard` arguments."""
    cli = [sys.executable, "-m", "switchyard.cli"]
    found = {}
    for spec in service_processes(settings):
        if spec.name.startswith("worker"):
            assert spec.argv[:3] == cli
            found[spec.name] = spec.argv[3:]
    return found


def test_run_starts_one_worker_per_class_by_default() -> None:
    assert _workers(_settings(1, 1, 1)) == {
        "worker-webhooks-1": ["worker", "--queues", "webhooks"],
        "worker-sync-1": ["worker", "--queues", "sync"],
        "worker-housekeeping-1": ["worker", "--queues", "housekeeping"],
    }


def test_run_starts_the_configured_count_of_each_class_and_none_for_zero() -> None:
    workers = _workers(_settings(webhooks=2, sync=0, housekeeping=3))
    assert list(workers) == [
        "worker-webhooks-1", "worker-webhooks-2",
        "worker-housekeeping-1", "worker-housekeeping-2", "worker-housekeeping-3",
    ]  # fmt: skip
    assert {tuple(args) for args in workers.values()} == {
        ("worker", "--queues", "webhooks"),
        ("worker", "--queues", "housekeeping"),
    }
    # The other parts are there whatever the pools.
    names = {spec.name for spec in service_processes(_settings(0, 0, 0))}
    assert names == {"api", "scheduler", "dispatcher", "sandbox"}


@pytest.fixture
def var_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SWITCHYARD_VAR_DIR", str(tmp_path))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_status_names_the_worker_classes_served_elsewhere(var_dir: Path) -> None:
    # run.json as `switchyard run` writes it with SWITCHYARD_WORKERS_SYNC=0; the front is gone.
    state = {
        "base_url": f"http://127.0.0.1:{free_port()}/v1",
        "processes": {"worker-webhooks-1": 2**22 + 1, "worker-housekeeping-1": 2**22 + 2},
        "workers": {"webhooks": 1, "sync": 0, "housekeeping": 1},
    }
    (var_dir / "run.json").write_text(json.dumps(state))
    result = CliRunner().invoke(app, ["status"], env={"COLUMNS": "200"})
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "down" in rows["worker-webhooks-1"]
    assert "elsewhere" in rows["worker-sync"]
    assert "SWITCHYARD_WORKERS_SYNC=0" in rows["worker-sync"]
    assert "switchyard worker --queues sync" in rows["worker-sync"]
    # A class with workers here is told by its processes alone.
    assert "worker-webhooks" not in rows and "worker-housekeeping" not in rows
