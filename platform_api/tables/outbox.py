"""The transactional outbox: events are written with the change that caused them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from platform_api.tables.common import timestamp_field


class OutboxEvent(SQLModel, table=True):
    __tablename__ = "outbox_event"

    id: str = Field(primary_key=True, max_length=40)  # the event id (webhook-id on delivery)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    event_type: str = Field(max_length=100, index=True)
    payload: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    created_at: datetime = timestamp_field()
    # Set for an event meant for one webhook only (a sync run's events go to the run's webhook).
    target_webhook_id: str | None = Field(default=None, max_length=40)
    # Set once the dispatcher has turned the event into delivery jobs.
    dispatched_at: datetime | None = Field(
        default=None, sa_type=sa.DateTime(timezone=True), index=True
    )
