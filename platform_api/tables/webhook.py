"""Webhooks, their deliveries (one per event and webhook) and each delivery's attempts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, StrictBool
from pydantic import Field as PydanticField
from sqlmodel import Field, SQLModel

from platform_api.event_types import subscription_schema
from platform_api.tables.common import timestamp_field

# Delivery states the API shows.
PENDING = "pending"
SUCCEEDED = "succeeded"
FAILED = "failed"
DELIVERY_STATES = (PENDING, SUCCEEDED, FAILED)


class Webhook(SQLModel, table=True):
    __tablename__ = "webhook"

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    target_url: str = Field(max_length=2048)
    # Fernet-encrypted `whsec_...` signing secret; shown to the caller once, at creation.
    secret_encrypted: str = Field(sa_type=sa.Text)
    is_active: bool = Field(default=True)
    # None: every event type; otherwise event types and `entity:*` patterns.
    event_types: list[str] | None = Field(default=None, sa_type=sa.JSON)
    # Only events created at or after this instant are delivered, so reactivating a webhook
    # never sends the events it missed while inactive.
    active_since: datetime = timestamp_field()
    # Events in a row that exhausted their retries; reset by any success.
    consecutive_failures: int = Field(default=0)
    disabled_reason: str | None = Field(default=None, max_length=200)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class WebhookDelivery(SQLModel, table=True):
    __tablename__ = "webhook_delivery"
    __table_args__ = (
        # One delivery per event and webhook (replays excepted): the dispatcher's fan-out
        # stays idempotent even if two dispatchers race.
        sa.Index(
            "uq_webhook_delivery_event",
            "webhook_id",
            "event_id",
            unique=True,
            sqlite_where=sa.text("replay_of IS NULL"),
            postgresql_where=sa.text("replay_of IS NULL"),
        ),
        sa.Index("ix_webhook_delivery_due", "status", "next_attempt_at"),
        sa.Index("ix_webhook_delivery_webhook", "webhook_id", "id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    webhook_id: str = Field(
        sa_column=sa.Column(
            sa.String(40), sa.ForeignKey("webhook.id", ondelete="CASCADE"), nullable=False
        )
    )
    environment_id: str = Field(max_length=32)
    event_id: str = Field(foreign_key="outbox_event.id", index=True, max_length=40)
    event_type: str = Field(max_length=100)
    status: str = Field(default=PENDING, max_length=16)
    attempt_count: int = Field(default=0)
    next_attempt_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    # A worker holds the delivery until this instant; an expired lease means the worker died.
    locked_until: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    # The RQ job meant to run the next attempt (None: not enqueued yet).
    job_id: str | None = Field(default=None, max_length=64)
    enqueued_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    failure_reason: str | None = Field(default=None, max_length=200)
    replay_of: str | None = Field(default=None, max_length=40)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()
    completed_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class WebhookAttempt(SQLModel, table=True):
    __tablename__ = "webhook_attempt"

    id: str = Field(primary_key=True, max_length=40)
    delivery_id: str = Field(
        sa_column=sa.Column(
            sa.String(40),
            sa.ForeignKey("webhook_delivery.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        )
    )
    number: int
    started_at: datetime = timestamp_field()
    finished_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    status_code: int | None = None
    duration_ms: int | None = None
    error: str | None = Field(default=None, max_length=500)


def _https_url(schema: dict[str, Any]) -> None:
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "string":
            branch.update({"format": "uri", "pattern": "^https://"})


class WebhookCreate(BaseModel):
    """Body of ``POST /webhook``."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "target_url": "https://hooks.example.com/switchyard",
                    "event_types": ["integrated_account:*"],
                }
            ]
        },
    )

    target_url: str = PydanticField(
        max_length=2048,
        description="An absolute https URL on a host the service may reach.",
        json_schema_extra=_https_url,
    )
    is_active: StrictBool = True
    event_types: list[str] | None = PydanticField(
        default=None, json_schema_extra=subscription_schema
    )


class WebhookUpdate(BaseModel):
    """Body of ``PATCH /webhook/{id}``: any creation field; ``event_types: null`` means all."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"is_active": False}]}
    )

    target_url: str | None = PydanticField(
        default=None, max_length=2048, json_schema_extra=_https_url
    )
    # Left out, not null, to keep the current value.
    is_active: StrictBool = None  # type: ignore[assignment]
    event_types: list[str] | None = PydanticField(
        default=None, json_schema_extra=subscription_schema
    )


class WebhookTestRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"id": "whk_01jc7f3k2m9q8r4t6v5w3x2y1z"}]}
    )

    id: str


class WebhookPublic(BaseModel):
    id: str
    target_url: str
    is_active: bool
    event_types: list[str] | None
    environment_id: str
    disabled_reason: str | None
    created_at: str
    updated_at: str


class WebhookCreated(WebhookPublic):
    secret: str


class AttemptPublic(BaseModel):
    attempted_at: str
    status_code: int | None
    duration_ms: int | None
    error: str | None


class DeliveryPublic(BaseModel):
    id: str
    webhook_id: str
    event_id: str
    event_type: str
    status: str
    attempt_count: int
    attempts: list[AttemptPublic]
    next_attempt_at: str | None
    failure_reason: str | None
    replay_of: str | None
    created_at: str
    completed_at: str | None


class DeliveryAccepted(BaseModel):
    delivery_id: str


class EventTypePublic(BaseModel):
    event_type: str
    description: str
