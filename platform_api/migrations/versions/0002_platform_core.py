"""Platform core: installed integrations, integrated accounts, link tokens.

Revision ID: 0002_platform_core
Revises: 0001_foundation
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_platform_core"
down_revision: str | None = "0001_foundation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "installed_integration",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("integration_name", sa.String(64), nullable=False),
        sa.Column("is_enabled", sa.Boolean(), nullable=False),
        sa.Column("override_encrypted", sa.Text(), nullable=True),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        sa.UniqueConstraint("environment_id", "integration_name", name="uq_installed_integration"),
    )
    op.create_index(
        "ix_installed_integration_environment_id", "installed_integration", ["environment_id"]
    )
    op.create_index(
        "ix_installed_integration_integration_name", "installed_integration", ["integration_name"]
    )
    op.create_table(
        "integrated_account",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column(
            "installed_integration_id",
            sa.String(40),
            sa.ForeignKey("installed_integration.id"),
            nullable=False,
        ),
        sa.Column("integration_name", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.Column("override", sa.JSON(), nullable=False),
        sa.Column("credentials_encrypted", sa.Text(), nullable=False),
        _timestamp("created_at"),
        _timestamp("updated_at"),
    )
    for column in ("environment_id", "installed_integration_id", "integration_name", "tenant_id"):
        op.create_index(f"ix_integrated_account_{column}", "integrated_account", [column])
    op.create_table(
        "link_token",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("environment_id", sa.String(32), sa.ForeignKey("environment.id"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("tenant_id", sa.String(200), nullable=False),
        sa.Column("integration_name", sa.String(64), nullable=True),
        sa.Column(
            "integrated_account_id",
            sa.String(40),
            sa.ForeignKey("integrated_account.id"),
            nullable=True,
        ),
        _timestamp("expires_at"),
        _timestamp("used_at", nullable=True),
        _timestamp("created_at"),
    )
    op.create_index("ix_link_token_environment_id", "link_token", ["environment_id"])
    op.create_index("ix_link_token_integrated_account_id", "link_token", ["integrated_account_id"])


def downgrade() -> None:
    op.drop_table("link_token")
    op.drop_table("integrated_account")
    op.drop_table("installed_integration")
