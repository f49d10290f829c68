"""Sync runs are fenced (a lease token), admitted per environment, and one per job and account.

Revision ID: 0006_fenced_fair_runs
Revises: 0005_sync_jobs
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_fenced_fair_runs"
down_revision: str | None = "0005_sync_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE_WHERE = "status IN ('queued', 'running', 'rate_limited')"


def upgrade() -> None:
    with op.batch_alter_table("sync_job_run") as batch:
        batch.add_column(sa.Column("lease_token", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("admitted_at", sa.DateTime(timezone=True), nullable=True))
    # Every run created before this revision was handed to RQ when it was created.
    op.execute("UPDATE sync_job_run SET admitted_at = created_at")
    # Duplicates the old check let through: all but the newest active run of a job and account
    # are failed, so the unique index can be built.
    op.execute(
        "UPDATE sync_job_run SET status = 'failed', "
        "error = 'superseded by a newer run of this job and account' "
        f"WHERE {ACTIVE_WHERE} AND id NOT IN ("
        "  SELECT MAX(id) FROM sync_job_run "
        f"  WHERE {ACTIVE_WHERE} GROUP BY sync_job_id, integrated_account_id)"
    )
    op.create_index(
        "uq_sync_job_run_one_active",
        "sync_job_run",
        ["sync_job_id", "integrated_account_id"],
        unique=True,
        sqlite_where=sa.text(ACTIVE_WHERE),
        postgresql_where=sa.text(ACTIVE_WHERE),
    )
    op.create_index(
        "ix_sync_job_run_waiting", "sync_job_run", ["environment_id", "status", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_sync_job_run_waiting", "sync_job_run")
    op.drop_index("uq_sync_job_run_one_active", "sync_job_run")
    with op.batch_alter_table("sync_job_run") as batch:
        batch.drop_column("admitted_at")
        batch.drop_column("lease_token")
