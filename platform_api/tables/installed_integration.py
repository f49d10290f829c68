"""Installed integrations: a catalog integration enabled in one environment."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, StrictBool
from pydantic import Field as PydanticField
from sqlmodel import Field, SQLModel

from platform_api.integrations.catalog import name_enum
from platform_api.tables.common import timestamp_field


class InstalledIntegration(SQLModel, table=True):
    __tablename__ = "installed_integration"
    __table_args__ = (
        sa.UniqueConstraint("environment_id", "integration_name", name="uq_installed_integration"),
    )

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    integration_name: str = Field(max_length=64, index=True)
    is_enabled: bool = Field(default=True)
    # The override may hold an OAuth client secret, so the whole object is encrypted at rest.
    override_encrypted: str | None = Field(default=None, sa_type=sa.Text)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class InstalledIntegrationCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"integration_name": "sandbox"}]}
    )

    integration_name: str = PydanticField(max_length=64, json_schema_extra=name_enum)


class InstalledIntegrationUpdate(BaseModel):
    """``override.oauth`` = ``client_id``, ``client_secret``, ``scopes``; other keys are form
    settings. Keys are merged into the stored override; a ``null`` value removes a key."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"is_enabled": False},
                {"override": {"oauth": {"client_id": "your-client-id", "scopes": ["read_orders"]}}},
            ]
        },
    )

    is_enabled: StrictBool | None = None
    override: dict[str, Any] | None = None


class IntegrationSummary(BaseModel):
    """How every record names its integration."""

    name: str
    label: str
    category: str


class InstalledIntegrationPublic(BaseModel):
    """The installed-integration record (``override.oauth.client_secret`` masked)."""

    id: str
    integration: IntegrationSummary
    is_enabled: bool
    override: dict[str, Any]
    created_at: str
    updated_at: str


class InstalledIntegrationPage(BaseModel):
    result: list[InstalledIntegrationPublic]
    next_cursor: str | None


class CatalogEntry(IntegrationSummary):
    """An integration of the catalog (``GET /v1/integration``)."""

    auth_scheme: str
    supports_oauth2: bool


class CatalogPage(BaseModel):
    result: list[CatalogEntry]
    next_cursor: str | None
