"""Integrated accounts: one end customer's connection to one installed integration."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict
from sqlmodel import Field, SQLModel

from platform_api.tables.common import timestamp_field
from platform_api.tables.installed_integration import IntegrationSummary

AccountStatus = Literal["active", "needs_reauth"]


class IntegratedAccount(SQLModel, table=True):
    __tablename__ = "integrated_account"

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    installed_integration_id: str = Field(
        foreign_key="installed_integration.id", index=True, max_length=40
    )
    # Copied from the installed integration so lists filter without a join.
    integration_name: str = Field(max_length=64, index=True)
    tenant_id: str = Field(max_length=200, index=True)
    status: str = Field(default="active", max_length=20)
    context: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    override: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    credentials_encrypted: str = Field(sa_type=sa.Text)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class IntegratedAccountUpdate(BaseModel):
    """Both objects are merged into what is stored; a ``null`` value removes a key."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"context": {"crm_owner": "support-team-eu"}}]},
    )

    context: dict[str, Any] | None = None
    override: dict[str, Any] | None = None


class IntegratedAccountPublic(BaseModel):
    """The account record as the API and its events show it (never credentials)."""

    id: str
    tenant_id: str
    integration: IntegrationSummary
    status: AccountStatus
    context: dict[str, Any]
    override: dict[str, Any]
    created_at: str
    updated_at: str


class IntegratedAccountPage(BaseModel):
    result: list[IntegratedAccountPublic]
    next_cursor: str | None
