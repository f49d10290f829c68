"""Unified API: the per-account API log.

Revision ID: 0004_unified
Revises: 0001_foundation
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_unified"
down_revision: str | None = "0001_foundation"
branch_labels: str | Sequence[str] | None = None
# api_log refers to integrated_account, created by the platform-core migration.
depends_on: str | Sequence[str] | None = "0002_platform_core"


def upgrade() -> None:
    op.create_table(
        "api_log",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column(
            "integrated_account_id",
            sa.String(40),
            sa.ForeignKey("integrated_account.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("method", sa.String(10), nullable=False),
        sa.Column("path", sa.String(500), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("upstream_status", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(64), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_api_log_environment_id", "api_log", ["environment_id"])
    op.create_index("ix_api_log_integrated_account_id", "api_log", ["integrated_account_id"])


def downgrade() -> None:
    op.drop_table("api_log")
