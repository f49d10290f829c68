"""`switchyard keys`: rotate the key that encrypts credentials at rest."""

from __future__ import annotations

import typer
from cryptography.fernet import Fernet, MultiFernet

from core.settings import Settings, get_settings
from platform_api.crypto import configured_keys, key_file, write_key_file
from platform_api.db import migrate
from platform_api.services.key_rotation import RotationError, reencrypt_all

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
    """
    settings = get_settings()
    migrate(settings)
    if settings.encryption_key:
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
        typer.echo("done: remove the old key(s) from SWITCHYARD_ENCRYPTION_KEY and restart.")
        return
    old_keys = configured_keys(settings)
    key = new_key.encode() if new_key else Fernet.generate_key()
    try:
        Fernet(key)
    except ValueError as exc:
        raise typer.BadParameter("not a Fernet key", param_hint="--new-key") from exc
    path = key_file(settings)
    # The old keys stay readable until every value is rotated.
    write_key_file(path, [key, *old_keys])
    _reencrypt(settings, [key, *old_keys])
    write_key_file(path, [key])
    typer.echo(f"done: {path} now holds only the new key (mode 0600).")


def _reencrypt(settings: Settings, keys: list[bytes]) -> None:
    try:
        counts = reencrypt_all(settings, MultiFernet([Fernet(k) for k in keys]))
    except (RotationError, ValueError) as exc:
        typer.echo(f"rotation stopped: {exc}", err=True)
        raise typer.Exit(1) from exc
    for table, count in counts.items():
        typer.echo(f"{table}: {count} values re-encrypted")
