"""Re-encrypting every secret at rest under the first configured key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet
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


class RotationError(Exception):
    """A value that none of the configured keys can read."""


def reencrypt_all(settings: Settings, fernet: MultiFernet) -> dict[str, int]:
    """Re-encrypt every value under ``fernet``'s first key, one committed batch at a time
    (values a batch already rotated stay readable, since every key still decrypts)."""
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
                    if not value:
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
