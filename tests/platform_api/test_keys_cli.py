"""`switchyard keys rotate`: every secret at rest re-encrypted under a new key, the old key
readable until the rotation finishes; the generated key file is 0600 and announced."""

from __future__ import annotations

import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken
from typer.testing import CliRunner

from core.settings import Settings, get_settings
from platform_api.crypto import configured_keys, decrypt_json, encrypt_json, key_file
from platform_api.db import session_scope
from platform_api.services import accounts
from platform_api.services.installed_integrations import find_installed, install
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
