"""Link tokens: short-lived, single-use tokens that start the connect-account flow."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from sqlmodel import Field, SQLModel

from platform_api.integrations.catalog import name_enum
from platform_api.tables.common import timestamp_field
from platform_api.tables.installed_integration import IntegrationSummary


class LinkToken(SQLModel, table=True):
    __tablename__ = "link_token"

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    # SHA-256 of the token; the token itself is returned once and never stored.
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), unique=True, nullable=False))
    tenant_id: str = Field(max_length=200)
    integration_name: str | None = PydanticField(
        default=None, max_length=64, json_schema_extra=name_enum
    )
    # Set for a reauthorization; the account's deletion removes its pending tokens.
    integrated_account_id: str | None = Field(
        default=None, foreign_key="integrated_account.id", index=True, max_length=40
    )
    expires_at: datetime = Field(sa_type=sa.DateTime(timezone=True))
    used_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    created_at: datetime = timestamp_field()


class LinkTokenCreate(BaseModel):
    """Exactly one of ``tenant_id`` (new connection) or ``integrated_account_id``."""

    # if/then/else rather than oneOf: client generators read a oneOf as a choice between the
    # two branches and lose the other fields.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "if": {"required": ["tenant_id"], "properties": {"tenant_id": {"type": "string"}}},
            "then": {"properties": {"integrated_account_id": {"type": "null"}}},
            "else": {"required": ["integrated_account_id"],
                     "properties": {"integrated_account_id": {"type": "string"}}},
            "examples": [
                {"tenant_id": "customer-8412", "integration_name": "sandbox"},
                {"integrated_account_id": "acct_01jc7f3k2m9q8r4t6v5w3x2y1z"},
            ],
        },
    )  # fmt: skip

    tenant_id: str | None = Field(default=None, min_length=1, max_length=200)
    integrated_account_id: str | None = Field(default=None, max_length=40)
    integration_name: str | None = PydanticField(
        default=None, max_length=64, json_schema_extra=name_enum
    )


class ConnectSessionCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "link_token": "lt_4mZ8qN2vX7cR1tY6wB3kP9sD",
                    "integration_name": "sandbox",
                    "credentials": {"api_key": "sk_sandbox_demo"},
                }
            ]
        },
    )

    link_token: str = Field(max_length=200)
    integration_name: str = PydanticField(max_length=64, json_schema_extra=name_enum)
    credentials: dict[str, str]


class LinkTokenPublic(BaseModel):
    link_token: str
    expires_at: str
    link_url: str


class CredentialFieldPublic(BaseModel):
    name: str
    label: str
    secret: bool
    required: bool
    description: str
    pattern: str | None = Field(
        default=None, description="A regular expression the whole value must match."
    )


class OAuth2Offer(BaseModel):
    authorize_url: str
    scopes: list[str]
    client_id: str | None


class AuthOffer(BaseModel):
    scheme: str
    fields: list[CredentialFieldPublic]
    oauth2: OAuth2Offer | None


class IntegrationOffer(IntegrationSummary):
    auth: AuthOffer


class ConnectSessionPublic(BaseModel):
    """What the connect page shows for a link token."""

    tenant_id: str
    mode: Literal["connect", "reauthorize"]
    integrated_account_id: str | None
    preselected_integration: str | None
    expires_at: str
    integrations: list[IntegrationOffer]


class ConnectResult(BaseModel):
    integrated_account_id: str
    integration: IntegrationSummary
    tenant_id: str
