"""`switchyard model use VERSION` rolls the served model over without failing a request."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from core.settings import get_settings
from serving.cli import app as model_cli
from tests.conftest import one_model_dir
from tests.serving.conftest import SWITCH_SUFFIX, deploy_session_app

pytestmark = [pytest.mark.slow, pytest.mark.db]

SINGLE = "/v1/inference/intent-classify"


class _Load:
    """Clients sending requests back to back until stopped, recording every answer."""

    def __init__(self, url: str, headers: dict[str, str], clients: int = 4) -> None:
        self.url, self.headers = url, headers
        self.results: list[tuple[int, str | None]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run) for _ in range(clients)]

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=60) as client:
            while not self._stop.is_set():
                try:
                    response = client.post(SINGLE, json={"message": "where is my parcel"})
                    version = response.json().get("model_version")
                    self.results.append((response.status_code, version))
                except httpx.HTTPError as exc:
                    self.results.append((0, repr(exc)))

    def __enter__(self) -> _Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def _use(version: str, models_root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SWITCHYARD_MODELS_ROOT", str(models_root))
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(model_cli, ["use", version])
    finally:
        monkeypatch.delenv("SWITCHYARD_MODELS_ROOT")
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    return result.output


def test_model_switch_drops_no_request(
    ray_live_server: str,
    auth_headers: dict[str, str],
    serve_app: str,
    models_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = f"{serve_app}{SWITCH_SUFFIX}"
    try:
        with _Load(ray_live_server, auth_headers) as load:
            while len(load.results) < 10:  # the old version is answering before the switch
                threading.Event().wait(0.05)
            output = _use(other, models_root, monkeypatch)
            seen_before_stop = len(load.results)
            # Keep the load on a little after the switch to see the new version answer.
            while len(load.results) < seen_before_stop + 20:
                threading.Event().wait(0.05)
        assert f"serving {other}" in output
        status = CliRunner().invoke(model_cli, ["status"])
        assert status.exit_code == 0 and status.output.strip() == other
        failures = [r for r in load.results if r[0] != 200]
        assert failures == []
        versions = [version for _, version in load.results]
        assert versions[0] == serve_app
        assert versions[-1] == other
        assert set(versions) == {serve_app, other}
    finally:
        _use(serve_app, models_root, monkeypatch)


def test_model_use_unknown_version_fails_cleanly(
    models_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHYARD_MODELS_ROOT", str(models_root))
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(model_cli, ["use", "no-such-version"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 2
    assert "no-such-version" in result.output


def test_model_list_marks_latest(
    serve_app: str, models_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHYARD_MODELS_ROOT", str(models_root))
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(model_cli, ["list"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(line.startswith(f"{serve_app} (LATEST)") for line in lines)
    assert any(line.startswith(f"{serve_app}{SWITCH_SUFFIX} ") for line in lines)


def test_broken_model_switch_keeps_serving_the_old_version(
    ray_live_server: str,
    auth_headers: dict[str, str],
    serve_app: str,
    models_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from serving.rollout import deploy, serve_config_for

    broken = models_root / "broken"
    broken.mkdir(exist_ok=True)
    served = one_model_dir(models_root / serve_app)
    for name in ("model_card.json", "labels.json", "calibration.json", "tokenizer.json"):
        (broken / name).write_bytes((served / name).read_bytes())
    card = json.loads((broken / "model_card.json").read_text())
    (broken / card.get("onnx_file", "model.onnx")).write_bytes(b"not an onnx model")

    monkeypatch.setenv("SWITCHYARD_MODELS_ROOT", str(models_root))
    get_settings.cache_clear()
    try:
        refused = CliRunner().invoke(model_cli, ["use", "broken"])
        assert refused.exit_code == 2 and "does not load" in refused.output
        # Pushed past the CLI's check, the replicas refuse it and keep answering.
        settings = get_settings()
        with _Load(ray_live_server, auth_headers, clients=2) as load, pytest.raises(TimeoutError):
            deploy(serve_config_for(settings, model_version="broken"), timeout_s=15)
        assert load.results and all(r == (200, serve_app) for r in load.results)
    finally:
        get_settings.cache_clear()
        deploy_session_app(models_root)
        shutil.rmtree(broken)
