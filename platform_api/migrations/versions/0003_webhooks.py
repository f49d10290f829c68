"""Webhooks: subscriptions, deliveries and their attempts.

Revision ID: 0003_webhooks
Revises: 0001_foundation
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_webhooks"
down_revision: str | None = "0001_foundation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "webhook",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("target_url", sa.String(2048), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=True),
        _ts("active_since"),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("disabled_reason", sa.String(200), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
    )
    op.create_index("ix_webhook_environment_id", "webhook", ["environment_id"])
    op.create_table(
        "webhook_delivery",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "webhook_id",
            sa.String(40),
            sa.ForeignKey("webhook.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("environment_id", sa.String(32), nullable=False),
        sa.Column("event_id", sa.String(40), sa.ForeignKey("outbox_event.id"), nullable=False),
        sa.Column("event_type", sa.String(100), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        _ts("next_attempt_at", nullable=True),
        _ts("locked_until", nullable=True),
        sa.Column("job_id", sa.String(64), nullable=True),
        _ts("enqueued_at", nullable=True),
        sa.Column("failure_reason", sa.String(200), nullable=True),
        sa.Column("replay_of", sa.String(40), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("completed_at", nullable=True),
    )
    op.create_index(
        "uq_webhook_delivery_event",
        "webhook_delivery",
        ["webhook_id", "event_id"],
        unique=True,
        sqlite_where=sa.text("replay_of IS NULL"),
        postgresql_where=sa.text("replay_of IS NULL"),
    )
    op.create_index("ix_webhook_delivery_due", "webhook_delivery", ["status", "next_attempt_at"])
    op.create_index("ix_webhook_delivery_webhook", "webhook_delivery", ["webhook_id", "id"])
    op.create_index("ix_webhook_delivery_event_id", "webhook_delivery", ["event_id"])
    op.create_table(
        "webhook_attempt",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "delivery_id",
            sa.String(40),
            sa.ForeignKey("webhook_delivery.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("number", sa.Integer(), nullable=False),
        _ts("started_at"),
        _ts("finished_at", nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
    )
    op.create_index("ix_webhook_attempt_delivery_id", "webhook_attempt", ["delivery_id"])


def downgrade() -> None:
    op.drop_table("webhook_attempt")
    op.drop_table("webhook_delivery")
    op.drop_table("webhook")
