"""Sync jobs, runs, cron triggers and the returns cache; an outbox event may name its webhook.

Revision ID: 0005_sync_jobs
Revises: 0004_unified
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_sync_jobs"
down_revision: str | None = "0004_unified"
branch_labels: str | Sequence[str] | None = None
# Runs and the cache refer to integrated_account; events live in the webhooks' outbox.
depends_on: str | Sequence[str] | None = ("0002_platform_core", "0003_webhooks")


def upgrade() -> None:
    op.create_table(
        "sync_job",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("integration_name", sa.String(64), nullable=False),
        sa.Column("resources", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sync_job_environment_id", "sync_job", ["environment_id"])
    op.create_table(
        "sync_job_run",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("sync_job_id", sa.String(40), nullable=False),
        sa.Column(
            "integrated_account_id",
            sa.String(40),
            sa.ForeignKey("integrated_account.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("webhook_id", sa.String(40), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("resource_stats", sa.JSON(), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_sync_job_run_environment_id", "sync_job_run", ["environment_id"])
    op.create_index(
        "ix_sync_job_run_integrated_account_id", "sync_job_run", ["integrated_account_id"]
    )
    op.create_index(
        "ix_sync_job_run_active", "sync_job_run", ["sync_job_id", "integrated_account_id"]
    )
    op.create_table(
        "sync_job_cron_trigger",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column(
            "sync_job_id",
            sa.String(40),
            sa.ForeignKey("sync_job.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "integrated_account_id",
            sa.String(40),
            sa.ForeignKey("integrated_account.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("webhook_id", sa.String(40), nullable=True),
        sa.Column("cron_expression", sa.String(100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    for column in ("environment_id", "sync_job_id", "integrated_account_id"):
        op.create_index(f"ix_sync_job_cron_trigger_{column}", "sync_job_cron_trigger", [column])
    op.create_table(
        "cached_return",
        sa.Column(
            "integrated_account_id",
            sa.String(40),
            sa.ForeignKey("integrated_account.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("status", sa.String(32), nullable=True),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("record_updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cached_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
    )
    op.create_index("ix_cached_return_environment_id", "cached_return", ["environment_id"])
    with op.batch_alter_table("outbox_event") as batch:
        batch.add_column(sa.Column("target_webhook_id", sa.String(40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox_event") as batch:
        batch.drop_column("target_webhook_id")
    op.drop_table("cached_return")
    op.drop_table("sync_job_cron_trigger")
    op.drop_table("sync_job_run")
    op.drop_table("sync_job")
