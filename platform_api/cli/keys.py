"""`switchyard keys`: rotate the key that encrypts credentials at rest."""

from __future__ import annotations

import sys

import typer
from cryptography.fernet import Fernet, MultiFernet

from core.settings import Settings, get_settings
from platform_api.crypto import configured_keys, key_file, write_key_file
from platform_api.db import migrate
from platform_api.services.key_rotation import (
    RotationError,
    reencrypt_all,
    rotation_lock,
    sweep_until_clean,
)

app = typer.Typer(help="Encryption keys for credentials at rest.", no_args_is_help=True)


@app.command("rotate")
def rotate(
    new_key: str | None = typer.Option(
        None, help="The new Fernet key (key-file mode only; default: a generated one)."
    ),
) -> None:
    """Re-encrypt every credential, override and webhook secret under a new key.

    With SWITCHYARD_ENCRYPTION_KEY set, put the new key first (``<new>,<old>``), restart the
    service, run this, then drop the old key. Without it (the key file under var_dir), the
    new key is added to the file first, every value re-encrypted, then the old key removed.
    One rotation runs at a time (a second one waits); values written under an old key while
    it runs are rewritten before the old key goes.
    """
    settings = get_settings()
    migrate(settings)
    with rotation_lock(settings, waiting=sys.stderr):
        if settings.encryption_key:
            _rotate_configured_keys(settings)
        else:
            _rotate_key_file(settings, new_key)


def _rotate_configured_keys(settings: Settings) -> None:
    keys = configured_keys(settings)
    if len(keys) < 2:
        typer.echo(
            "SWITCHYARD_ENCRYPTION_KEY holds one key. Put a new key first "
            "(SWITCHYARD_ENCRYPTION_KEY=<new>,<old>), restart the service, then run this "
            "again.\nA new key: " + Fernet.generate_key().decode(),
            err=True,
        )
        raise typer.Exit(1)
    _reencrypt(settings, keys)
    if not _sweep(settings, keys):
        typer.echo(
            "values keep arriving under an old key: a process still runs with the old "
            "SWITCHYARD_ENCRYPTION_KEY. Restart it, then run this again; keep the old key.",
            err=True,
        )
        raise typer.Exit(1)
    typer.echo("done: remove the old key(s) from SWITCHYARD_ENCRYPTION_KEY and restart.")


def _rotate_key_file(settings: Settings, new_key: str | None) -> None:
    old_keys = configured_keys(settings)
    key = new_key.encode() if new_key else Fernet.generate_key()
    try:
        Fernet(key)
    except ValueError as exc:
        raise typer.BadParameter("not a Fernet key", param_hint="--new-key") from exc
    path = key_file(settings)
    keys = [key, *old_keys]
    # Every process reads the file on each use: from here on they encrypt with the new key,
    # and the old keys stay readable until no value needs them.
    write_key_file(path, keys)
    _reencrypt(settings, keys)
    if not _sweep(settings, keys):
        typer.echo(f"values keep arriving under an old key; {path} keeps it. Run again.", err=True)
        raise typer.Exit(1)
    write_key_file(path, [key])
    # A value committed between the last pass and the write above: the old keys are still
    # in hand here, so one more pass rewrites it.
    _sweep(settings, keys)
    typer.echo(f"done: {path} now holds only the new key (mode 0600).")


def _fernet(keys: list[bytes]) -> MultiFernet:
    return MultiFernet([Fernet(k) for k in keys])


def _reencrypt(settings: Settings, keys: list[bytes]) -> None:
    try:
        counts = reencrypt_all(settings, _fernet(keys), keys[0])
    except (RotationError, ValueError) as exc:
        typer.echo(f"rotation stopped: {exc}", err=True)
        raise typer.Exit(1) from exc
    for table, count in counts.items():
        typer.echo(f"{table}: {count} values re-encrypted")


def _sweep(settings: Settings, keys: list[bytes]) -> bool:
    try:
        return sweep_until_clean(settings, _fernet(keys), keys[0])
    except (RotationError, ValueError) as exc:
        typer.echo(f"rotation stopped: {exc}", err=True)
        raise typer.Exit(1) from exc
