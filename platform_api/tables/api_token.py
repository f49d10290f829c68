"""API tokens: high-entropy bearer secrets stored only as a hash, scoped to one environment."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from platform_api.tables.common import timestamp_field


class ApiToken(SQLModel, table=True):
    __tablename__ = "api_token"

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    name: str = Field(default="", max_length=200)
    # SHA-256 of the secret; the secret itself is shown once and never stored.
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), unique=True, nullable=False))
    prefix: str = Field(max_length=16)
    created_at: datetime = timestamp_field()
    expires_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    revoked_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
