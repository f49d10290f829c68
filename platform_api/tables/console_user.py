"""Console operators and their signed-in sessions (the operator console at /console)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from platform_api.tables.common import timestamp_field

USERNAME_MAX_LENGTH = 64


class ConsoleUser(SQLModel, table=True):
    """An operator: a password stored only as a salted scrypt hash, and the environments the
    operator may see (the console shows no other)."""

    __tablename__ = "console_user"

    id: str = Field(primary_key=True, max_length=40)
    username: str = Field(
        sa_column=sa.Column(sa.String(USERNAME_MAX_LENGTH), unique=True, nullable=False)
    )
    # "scrypt$<n>$<r>$<p>$<salt hex>$<hash hex>": the parameters travel with the hash.
    password_hash: str = Field(max_length=255)
    environments: list[str] = Field(default_factory=list, sa_type=sa.JSON)
    created_at: datetime = timestamp_field()
    disabled_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class ConsoleSession(SQLModel, table=True):
    """A sign-in: the cookie holds a random secret, the row only its SHA-256."""

    __tablename__ = "console_session"

    id: str = Field(primary_key=True, max_length=64)  # SHA-256 (hex) of the session secret
    user_id: str = Field(foreign_key="console_user.id", index=True, max_length=40)
    csrf_token: str = Field(max_length=64)
    created_at: datetime = timestamp_field()
    expires_at: datetime = Field(sa_type=sa.DateTime(timezone=True))
