"""Production mode needs SWITCHYARD_ENCRYPTION_KEY; the development key file is created once,
whoever creates it first, even by processes starting together."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Literal

import pytest
from cryptography.fernet import Fernet

from core.settings import Settings, get_settings
from platform_api import crypto
from platform_api.crypto import (
    MissingEncryptionKey,
    configured_keys,
    decrypt_json,
    encrypt_json,
    key_file,
)
from switchyard.app import create_app, from_environment


def _settings(
    tmp_path: Path, mode: Literal["development", "production"] = "development"
) -> Settings:
    return Settings(var_dir=tmp_path, encryption_key=None, mode=mode)


def test_production_mode_refuses_to_generate_a_key(tmp_path: Path) -> None:
    settings = _settings(tmp_path, mode="production")
    with pytest.raises(MissingEncryptionKey, match="SWITCHYARD_ENCRYPTION_KEY"):
        configured_keys(settings)
    assert not key_file(settings).exists()


def test_production_mode_uses_the_given_key(tmp_path: Path) -> None:
    key = Fernet.generate_key()
    settings = Settings(var_dir=tmp_path, mode="production", encryption_key=key.decode())
    assert configured_keys(settings) == [key]


def test_the_front_does_not_start_in_production_without_a_key(tmp_path: Path) -> None:
    with pytest.raises(MissingEncryptionKey):
        create_app(_settings(tmp_path, mode="production"))


def test_the_uvicorn_factory_exits_with_one_line_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHYARD_MODE", "production")
    monkeypatch.setenv("SWITCHYARD_VAR_DIR", str(tmp_path))
    monkeypatch.delenv("SWITCHYARD_ENCRYPTION_KEY", raising=False)
    # from_environment sets this for the whole process when unset, and later subprocesses that
    # call Ray Serve (the rollout) would inherit it: set here, monkeypatch removes it after
    # (a delenv of an unset variable records nothing to undo).
    monkeypatch.setenv("RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP", "1")
    get_settings.cache_clear()
    with pytest.raises(SystemExit) as exited:
        from_environment()
    [line] = str(exited.value.code).splitlines()
    assert "SWITCHYARD_ENCRYPTION_KEY" in line and "production" in line


def test_two_processes_creating_the_key_file_at_once_agree_on_one_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both find no file and generate a key before either writes: the race the file must win.
    both_generating = threading.Barrier(2, timeout=10)
    generate = Fernet.generate_key

    def generate_together() -> bytes:
        both_generating.wait()
        return generate()

    monkeypatch.setattr(crypto.Fernet, "generate_key", staticmethod(generate_together))
    settings = _settings(tmp_path)
    found: dict[str, list[bytes]] = {}

    def start(name: str) -> None:
        found[name] = configured_keys(settings)

    threads = [threading.Thread(target=start, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    on_disk = crypto._read_keys(key_file(settings))
    assert found["a"] == found["b"] == on_disk
    assert len(on_disk) == 1
    monkeypatch.undo()
    written_by_a = encrypt_json({"v": 1}, settings)
    assert decrypt_json(written_by_a, settings) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["encryption.key"]  # no staging left


def test_a_key_file_write_leaves_another_writers_staging_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "encryption.key"
    # What a rotation under way in another process may be staging at this moment.
    theirs = tmp_path / "encryption.key.new"
    theirs.write_bytes(b"their keys\n")
    key = Fernet.generate_key()
    crypto.write_key_file(path, [key])
    assert crypto._read_keys(path) == [key]
    assert theirs.read_bytes() == b"their keys\n"
