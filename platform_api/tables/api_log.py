"""The API log: one row per unified or proxy call of an integrated account."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from platform_api.tables.common import timestamp_field


class ApiLogEntry(SQLModel, table=True):
    __tablename__ = "api_log"

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    integrated_account_id: str = Field(
        foreign_key="integrated_account.id", index=True, max_length=40, ondelete="CASCADE"
    )
    kind: str = Field(max_length=16)  # unified | proxy
    method: str = Field(max_length=10)  # the caller's HTTP method
    path: str = Field(max_length=500)  # the unified or proxy path the caller used
    status: int  # what the caller got
    upstream_status: int | None = None  # the provider's last answer; None when not called
    error: str | None = Field(default=None, max_length=64)
    duration_ms: float
    request_id: str = Field(max_length=128)
    created_at: datetime = timestamp_field()
