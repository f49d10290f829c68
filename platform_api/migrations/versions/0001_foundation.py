"""Foundation: environments, API tokens, the event outbox.

Revision ID: 0001_foundation
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0001_foundation"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    environment = op.create_table(
        "environment",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("label", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    now = datetime.now(UTC)
    op.bulk_insert(
        environment,
        [
            {"id": "development", "label": "Development", "created_at": now},
            {"id": "staging", "label": "Staging", "created_at": now},
            {"id": "production", "label": "Production", "created_at": now},
        ],
    )
    op.create_table(
        "api_token",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_api_token_environment_id", "api_token", ["environment_id"])
    op.create_table(
        "outbox_event",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("event_type", sa.String(100), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_outbox_event_environment_id", "outbox_event", ["environment_id"])
    op.create_index("ix_outbox_event_event_type", "outbox_event", ["event_type"])
    op.create_index("ix_outbox_event_dispatched_at", "outbox_event", ["dispatched_at"])


def downgrade() -> None:
    op.drop_table("outbox_event")
    op.drop_table("api_token")
    op.drop_table("environment")
