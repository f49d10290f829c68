"""`switchyard keys rotate`: every secret at rest re-encrypted under a new key, the old key
readable until the rotation finishes; the generated key file is 0600 and announced."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken
from typer.testing import CliRunner

from core.settings import Settings, get_settings
from platform_api.cli import keys as keys_cli
from platform_api.crypto import configured_keys, decrypt_json, encrypt_json, key_file
from platform_api.db import session_scope
from platform_api.services import accounts
from platform_api.services.installed_integrations import find_installed, install
from platform_api.services.key_rotation import rotation_lock
from platform_api.tables.integrated_account import IntegratedAccount
from switchyard.cli import app as cli

pytestmark = pytest.mark.db

runner = CliRunner()
CREDENTIALS = {"shop": "acme", "access_token": "shpat_rotate_me"}


def _use(monkeypatch: pytest.MonkeyPatch, **env: str | None) -> Settings:
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    return get_settings()


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    yield
    get_settings.cache_clear()


def _account() -> str:
    settings = get_settings()
    with session_scope(settings) as session:
        installed = find_installed(
            session, environment_id="development", integration_name="shopify"
        ) or install(session, environment_id="development", integration_name="shopify")
        session.flush()
        account = accounts.create_account(
            session, installed=installed, tenant_id="t", credentials=CREDENTIALS, settings=settings
        )
        return account.id


def _stored(account_id: str) -> str:
    with session_scope(get_settings()) as session:
        account = session.get(IntegratedAccount, account_id)
        assert account is not None
        return account.credentials_encrypted


def test_rotation_with_keys_from_the_environment(
    db: None, monkeypatch: pytest.MonkeyPatch, _test_environment: dict[str, str]
) -> None:
    old = _test_environment["SWITCHYARD_ENCRYPTION_KEY"]
    account_id = _account()
    # One key only: the command explains the procedure and changes nothing.
    refused = runner.invoke(cli, ["keys", "rotate"])
    assert refused.exit_code == 1 and "<new>,<old>" in refused.output
    new = Fernet.generate_key().decode()
    before = _stored(account_id)
    _use(monkeypatch, SWITCHYARD_ENCRYPTION_KEY=f"{new},{old}")
    assert decrypt_json(_stored(account_id), get_settings()) == CREDENTIALS  # both keys read
    result = runner.invoke(cli, ["keys", "rotate"])
    assert result.exit_code == 0, result.output
    assert "integrated_account: 1 values re-encrypted" in result.output
    assert _stored(account_id) != before
    only_new = _use(monkeypatch, SWITCHYARD_ENCRYPTION_KEY=new)
    assert decrypt_json(_stored(account_id), only_new) == CREDENTIALS
    only_old = _use(monkeypatch, SWITCHYARD_ENCRYPTION_KEY=old)
    with pytest.raises(ValueError):
        decrypt_json(_stored(account_id), only_old)


def test_rotation_of_the_generated_key_file(
    db: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = _use(monkeypatch, SWITCHYARD_ENCRYPTION_KEY=None, SWITCHYARD_VAR_DIR=str(tmp_path))
    with caplog.at_level(logging.WARNING):
        account_id = _account()
    path = key_file(settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Through stdlib logging once the service configured it, else structlog's own printer.
    printed = caplog.text + "".join(capsys.readouterr())
    assert "encryption_key_generated" in printed and "0600" in printed
    [old] = configured_keys(settings)
    result = runner.invoke(cli, ["keys", "rotate"])
    assert result.exit_code == 0, result.output
    [new] = configured_keys(settings)
    assert new != old and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert decrypt_json(_stored(account_id), settings) == CREDENTIALS
    with pytest.raises(InvalidToken):
        Fernet(old).decrypt(_stored(account_id).encode())


def test_values_written_before_a_rotation_read_during_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = _use(monkeypatch, SWITCHYARD_ENCRYPTION_KEY=None, SWITCHYARD_VAR_DIR=str(tmp_path))
    token = encrypt_json({"a": 1}, settings)
    old = configured_keys(settings)
    key_file(settings).write_bytes(Fernet.generate_key() + b"\n" + old[0] + b"\n")
    assert decrypt_json(token, settings) == {"a": 1}  # the old key still reads


def test_a_value_written_under_the_old_key_during_a_rotation_stays_readable(
    db: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A request that read the key list just before the rotation changed it commits its value
    # under the old key after the first pass went by: the rotation must rewrite it too.
    settings = _use(monkeypatch, SWITCHYARD_ENCRYPTION_KEY=None, SWITCHYARD_VAR_DIR=str(tmp_path))
    first = _account()
    [old] = configured_keys(settings)
    late = _account()
    real_pass = keys_cli.reencrypt_all

    def pass_then_late_write(*args: object, **kwargs: object) -> dict[str, int]:
        counts = real_pass(*args, **kwargs)  # type: ignore[arg-type]
        with session_scope(settings) as session:
            account = session.get(IntegratedAccount, late)
            assert account is not None
            account.credentials_encrypted = Fernet(old).encrypt(b'{"late": true}').decode()
        return counts

    monkeypatch.setattr(keys_cli, "reencrypt_all", pass_then_late_write)
    result = runner.invoke(cli, ["keys", "rotate"])
    assert result.exit_code == 0, result.output
    [new] = configured_keys(settings)
    assert new != old
    assert decrypt_json(_stored(first), settings) == CREDENTIALS
    assert decrypt_json(_stored(late), settings) == {"late": True}


def test_a_second_rotation_waits_for_the_first(
    db: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = _use(monkeypatch, SWITCHYARD_ENCRYPTION_KEY=None, SWITCHYARD_VAR_DIR=str(tmp_path))
    account_id = _account()
    [old] = configured_keys(settings)
    with rotation_lock(settings):  # a rotation under way
        rotating = subprocess.Popen(
            [str(Path(sys.executable).parent / "switchyard"), "keys", "rotate"],
            env={**os.environ, "SWITCHYARD_VAR_DIR": str(tmp_path)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert rotating.stderr is not None
        waiting = iter(rotating.stderr.readline, "")  # ends if it exits without waiting
        assert any("another key rotation is under way" in line for line in waiting)
        assert configured_keys(settings) == [old]  # it touched nothing while waiting
    output, errors = rotating.communicate(timeout=120)
    assert rotating.returncode == 0, output + errors
    [new] = configured_keys(settings)
    assert new != old
    assert decrypt_json(_stored(account_id), settings) == CREDENTIALS
