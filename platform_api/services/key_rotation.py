"""Re-encrypting every secret at rest under the first configured key.

A rotation holds an exclusive lock (``rotation_lock``) from its first key-file write to its
last, so two rotations never interleave (one could otherwise drop the key the other had just
encrypted with). Values are rewritten only when the first key cannot read them, so a pass over
already-rotated rows writes nothing, and a pass that rewrites nothing proves every value is
under the first key.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlmodel import SQLModel, col, select

from core.settings import Settings
from platform_api.db import session_scope
from platform_api.tables.installed_integration import InstalledIntegration
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.webhook import Webhook

# Every encrypted column: (table, value column name); each table has a string ``id``.
ENCRYPTED_COLUMNS: list[tuple[type[SQLModel], str]] = [
    (IntegratedAccount, "credentials_encrypted"),
    (InstalledIntegration, "override_encrypted"),
    (Webhook, "secret_encrypted"),
]
BATCH = 200
LOCK_FILE = "encryption.key.lock"


class RotationError(Exception):
    """A value that none of the configured keys can read."""


@contextmanager
def rotation_lock(settings: Settings, *, waiting: TextIO | None = None) -> Iterator[None]:
    """Hold the machine-wide rotation lock (a ``flock`` beside the key file); when another
    rotation holds it, say so on ``waiting`` and wait for it to finish."""
    path = Path(settings.var_dir) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                print("another key rotation is under way: waiting for it", file=waiting)
                waiting.flush()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def reencrypt_all(settings: Settings, fernet: MultiFernet, first_key: bytes) -> dict[str, int]:
    """Re-encrypt under ``first_key`` every value it cannot read yet, one committed batch at a
    time (values a batch already rotated stay readable, since every key still decrypts).
    Returns how many values each table had rewritten."""
    current = Fernet(first_key)
    counts: dict[str, int] = {}
    for table, column in ENCRYPTED_COLUMNS:
        name = str(table.__tablename__)
        counts[name] = 0
        last_id = ""
        while True:
            with session_scope(settings) as session:
                id_column = col(getattr(table, "id"))  # noqa: B009 - every table here has one
                statement = select(table).where(id_column > last_id).order_by(id_column)
                rows: Sequence[Any] = session.exec(statement.limit(BATCH)).all()
                for row in rows:
                    value = getattr(row, column)
                    if not value or _reads(current, value):
                        continue
                    try:
                        setattr(row, column, fernet.rotate(value.encode()).decode())
                    except InvalidToken as exc:
                        raise RotationError(f"{name} {row.id}: no configured key reads it") from exc
                    session.add(row)
                    counts[name] += 1
            if len(rows) < BATCH:
                break
            last_id = rows[-1].id
    return counts


def sweep_until_clean(
    settings: Settings, fernet: MultiFernet, first_key: bytes, *, passes: int = 5
) -> bool:
    """Pass over every value again until a pass rewrites nothing: a writer that read the key
    list before it changed may commit a value under an old key after the first pass went by.
    False when values still needed rewriting after ``passes`` passes."""
    rewrites = (sum(reencrypt_all(settings, fernet, first_key).values()) for _ in range(passes))
    return any(count == 0 for count in rewrites)


def _reads(fernet: Fernet, value: str) -> bool:
    try:
        fernet.decrypt(value.encode())
    except InvalidToken:
        return False
    return True
