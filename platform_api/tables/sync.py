"""Sync jobs, their runs, and the cache of records the runs keep (returns)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from sqlmodel import Field, SQLModel

from platform_api.integrations.catalog import name_enum
from platform_api.tables.common import timestamp_field

RunStatus = Literal["queued", "running", "rate_limited", "completed", "failed", "stopped"]
RUN_STATES: tuple[str, ...] = get_args(RunStatus)
ACTIVE_STATES = ("queued", "running", "rate_limited")
ACTIVE_WHERE = "status IN ('queued', 'running', 'rate_limited')"


class SyncJob(SQLModel, table=True):
    __tablename__ = "sync_job"

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    integration_name: str = Field(max_length=64)
    resources: list[dict[str, Any]] = Field(default_factory=list, sa_type=sa.JSON)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class SyncJobRun(SQLModel, table=True):
    __tablename__ = "sync_job_run"
    __table_args__ = (
        sa.Index("ix_sync_job_run_active", "sync_job_id", "integrated_account_id"),
        # One active run per job and account, held by the database (two concurrent creates
        # both pass a SELECT that finds nothing; the second insert fails here instead).
        sa.Index(
            "uq_sync_job_run_one_active",
            "sync_job_id",
            "integrated_account_id",
            unique=True,
            sqlite_where=sa.text(ACTIVE_WHERE),
            postgresql_where=sa.text(ACTIVE_WHERE),
        ),
        # The admission queue: an environment's waiting runs, oldest first.
        sa.Index("ix_sync_job_run_waiting", "environment_id", "status", "created_at"),
    )

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    # No foreign key: deleting a job lets a run already under way finish (and keeps its record).
    sync_job_id: str = Field(max_length=40)
    integrated_account_id: str = Field(
        foreign_key="integrated_account.id", index=True, max_length=40, ondelete="CASCADE"
    )
    webhook_id: str | None = Field(default=None, max_length=40)
    status: str = Field(default="queued", max_length=16)
    resource_stats: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    error: str | None = Field(default=None, max_length=500)
    created_at: datetime = timestamp_field()
    started_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    finished_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    # Written by the worker at every page and while it waits out a 429: the reaper fails a
    # running run whose heartbeat stopped (its worker died).
    heartbeat_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    # The fencing token: raised each time a worker claims the run and when the reaper fails
    # it; a worker's writes name the token it claimed with, so a run taken from it (reaped,
    # stopped) accepts none of them.
    lease_token: int = Field(default=0)
    # When the run was handed to the workers (None: it waits for its environment's turn).
    admitted_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class SyncJobCronTrigger(SQLModel, table=True):
    """Runs a job for an account on a cron schedule (UTC), through rq-scheduler."""

    __tablename__ = "sync_job_cron_trigger"

    id: str = Field(primary_key=True, max_length=40)
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    sync_job_id: str = Field(
        foreign_key="sync_job.id", index=True, max_length=40, ondelete="CASCADE"
    )
    integrated_account_id: str = Field(
        foreign_key="integrated_account.id", index=True, max_length=40, ondelete="CASCADE"
    )
    webhook_id: str | None = Field(default=None, max_length=40)
    cron_expression: str = Field(max_length=100)
    created_at: datetime = timestamp_field()


class CachedReturn(SQLModel, table=True):
    """A unified ``wms/returns`` record as the account's last sync runs saw it."""

    __tablename__ = "cached_return"

    integrated_account_id: str = Field(
        primary_key=True, foreign_key="integrated_account.id", max_length=40, ondelete="CASCADE"
    )
    id: str = Field(primary_key=True, max_length=200)  # the return's unified id
    environment_id: str = Field(foreign_key="environment.id", index=True, max_length=32)
    status: str | None = Field(default=None, max_length=32)
    record: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    record_updated_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    cached_at: datetime = timestamp_field()
    run_id: str = Field(max_length=40)  # the run that last wrote it


class SyncResource(BaseModel):
    """One resource of a job: what to fetch, after which other resource, with which query."""

    model_config = ConfigDict(extra="forbid")

    resource: str = PydanticField(
        max_length=200,
        description="A unified `category/resource` (e.g. `wms/returns`) or a provider path "
        "read through the proxy API (`proxy/<path>`).",
    )
    method: str = PydanticField(
        default="list",
        pattern=r"^[a-z][a-z0-9_]{0,39}$",
        description="`list`, `get`, or a custom read method the integration declares.",
    )
    depends_on: str | None = PydanticField(
        default=None,
        max_length=200,
        description="Another resource of this job: this one runs once per record of it.",
    )
    query: dict[str, str] = PydanticField(
        default_factory=dict,
        description="Query values; `{{parent.<field>}}` takes the parent record's field.",
    )


class SyncJobCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "integration_name": "sandbox",
                    "resources": [{"resource": "wms/returns", "query": {"status": "open"}}],
                }
            ]
        },
    )

    integration_name: str = PydanticField(max_length=64, json_schema_extra=name_enum)
    resources: list[SyncResource] = PydanticField(min_length=1, max_length=20)


class SyncJobRunCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "sync_job_id": "sjob_01jc7f3k2m9q8r4t6v5w3x2y1z",
                    "integrated_account_id": "acct_01jc7f3k2m9q8r4t6v5w3x2y1z",
                }
            ]
        },
    )

    sync_job_id: str = PydanticField(max_length=40)
    integrated_account_id: str = PydanticField(max_length=40)
    webhook_id: str | None = PydanticField(default=None, max_length=40)


class SyncJobCronTriggerCreate(SyncJobRunCreate):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "sync_job_id": "sjob_01jc7f3k2m9q8r4t6v5w3x2y1z",
                    "integrated_account_id": "acct_01jc7f3k2m9q8r4t6v5w3x2y1z",
                    "cron_expression": "0 * * * *",
                }
            ]
        },
    )

    cron_expression: str = PydanticField(
        max_length=100, description="Five-field cron syntax, evaluated in UTC (`0 * * * *`)."
    )
