"""The operator console: operators and their sessions.

Revision ID: 0007_console_users
Revises: 0006_fenced_fair_runs
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_console_users"
down_revision: str | None = "0006_fenced_fair_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "console_user",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("username", sa.String(64), nullable=False, unique=True),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("environments", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "console_session",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(40), sa.ForeignKey("console_user.id"), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_console_session_user_id", "console_session", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_console_session_user_id", "console_session")
    op.drop_table("console_session")
    op.drop_table("console_user")
