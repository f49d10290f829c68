"""Sync jobs and runs: validation, records, and handing a run to the workers."""

from __future__ import annotations

import re
from graphlib import CycleError, TopologicalSorter
from typing import Any, cast

import redis
import sqlalchemy as sa
import structlog
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from core.errors import ApiError, invalid_request, not_found
from core.settings import Settings
from platform_api.ids import new_id
from platform_api.integrations.catalog import get_manifest
from platform_api.pagination import PageParams, paginate
from platform_api.services import accounts
from platform_api.services.events import record_event
from platform_api.sync import admission
from platform_api.tables.common import isoformat, utcnow
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.sync import (
    ACTIVE_STATES,
    RUN_STATES,
    SyncJob,
    SyncJobCreate,
    SyncJobRun,
    SyncJobRunCreate,
    SyncResource,
)
from platform_api.tables.webhook import Webhook
from platform_api.unified.resource_map import get_resources

log = structlog.get_logger(__name__)

PLACEHOLDER = re.compile(r"\{\{\s*parent\.([A-Za-z0-9_.]+)\s*\}\}")


def order_resources(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The resources, each after the one it depends on."""
    by_name = {r["resource"]: r for r in resources}
    graph = {r["resource"]: {r["depends_on"]} if r.get("depends_on") else set() for r in resources}
    return [by_name[name] for name in TopologicalSorter(graph).static_order()]


def _check_unified(field: str, item: SyncResource, integration: str, category: str) -> None:
    """``item`` names a unified resource and a method the integration offers for it."""
    resource_map = get_resources(integration)
    item_category, _, resource = item.resource.partition("/")
    spec = resource_map.resources.get(resource) if resource_map is not None else None
    if item_category != category or spec is None:
        raise invalid_request(f"{field}.resource: {integration} has no unified {item.resource!r}")
    if item.method not in spec.read_methods():
        offered = ", ".join(spec.read_methods())
        raise invalid_request(
            f"{field}.method: {item.resource} has no read method {item.method!r} (it has {offered})"
        )
    if spec.shape_of(item.method) == "get" and item.depends_on is None:
        raise invalid_request(f"{field}.method: {item.method!r} needs depends_on (whose id?)")


def _check_proxy(field: str, item: SyncResource, integration: str) -> None:
    """``item`` names a provider path read through the proxy API."""
    path = item.resource.removeprefix("proxy/")
    segments = path.split("/")
    if not path or any(s in ("", ".", "..") for s in segments) or set(path) & set("?#\\"):
        raise invalid_request(
            f"{field}.resource: {item.resource!r} is not a provider path (proxy/<path>)"
        )
    if PLACEHOLDER.search(path) and item.depends_on is None:
        raise invalid_request(f"{field}.resource: {{{{parent…}}}} needs depends_on")
    if item.method not in ("list", "get"):
        raise invalid_request(f"{field}.method: a proxy resource is read with 'list' or 'get'")
    resource_map = get_resources(integration)
    if item.method == "list" and (resource_map is None or resource_map.proxy is None):
        raise invalid_request(
            f"{field}.method: {integration} does not say how its lists page; use 'get'"
        )


def _validate(data: SyncJobCreate) -> None:
    manifest = get_manifest(data.integration_name)
    if manifest is None:
        raise invalid_request(f"integration_name: no integration named {data.integration_name!r}")
    names = [r.resource for r in data.resources]
    for i, item in enumerate(data.resources):
        field = f"resources[{i}]"
        if item.resource.startswith("proxy/"):
            _check_proxy(field, item, data.integration_name)
        else:
            _check_unified(field, item, data.integration_name, manifest.category)
        if item.resource in names[:i]:
            raise invalid_request(f"{field}.resource: {item.resource!r} is listed twice")
        if item.depends_on is not None and item.depends_on not in names:
            raise invalid_request(f"{field}.depends_on: {item.depends_on!r} is not in this job")
        if item.depends_on == item.resource:
            raise invalid_request(f"{field}.depends_on: a resource cannot depend on itself")
        for key, value in item.query.items():
            if PLACEHOLDER.search(value) and item.depends_on is None:
                raise invalid_request(f"{field}.query.{key}: {{{{parent…}}}} needs depends_on")
    try:
        order_resources([r.model_dump() for r in data.resources])
    except CycleError as exc:
        raise invalid_request(f"resources: depends_on forms a cycle: {exc.args[1]}") from exc


def serialize_job(job: SyncJob) -> dict[str, Any]:
    return {
        "id": job.id,
        "integration_name": job.integration_name,
        "resources": job.resources,
        "environment_id": job.environment_id,
        "created_at": isoformat(job.created_at),
        "updated_at": isoformat(job.updated_at),
    }


def create_job(session: Session, *, environment_id: str, data: SyncJobCreate) -> SyncJob:
    _validate(data)
    job = SyncJob(
        id=new_id("sjob"),
        environment_id=environment_id,
        integration_name=data.integration_name,
        resources=[r.model_dump() for r in data.resources],
    )
    session.add(job)
    return job


def get_job(session: Session, *, environment_id: str, job_id: str) -> SyncJob:
    job = session.get(SyncJob, job_id)
    if job is None or job.environment_id != environment_id:
        raise not_found(f"sync job {job_id}")
    return job


def list_jobs(session: Session, *, environment_id: str, params: PageParams) -> dict[str, Any]:
    statement = select(SyncJob).where(col(SyncJob.environment_id) == environment_id)
    return paginate(
        session, statement, id_column=col(SyncJob.id), params=params,
        scope=f"sync-job:{environment_id}", serialize=serialize_job,
    )  # fmt: skip


def delete_job(session: Session, *, job: SyncJob) -> None:
    """Delete the job; a run already under way finishes (runs keep their record)."""
    session.delete(job)


def serialize_run(run: SyncJobRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "sync_job_id": run.sync_job_id,
        "integrated_account_id": run.integrated_account_id,
        "webhook_id": run.webhook_id,
        "status": run.status,
        "resource_stats": run.resource_stats,
        "error": run.error,
        "created_at": isoformat(run.created_at),
        "started_at": isoformat(run.started_at),
        "finished_at": isoformat(run.finished_at),
    }


def check_run_request(
    session: Session, *, environment_id: str, data: SyncJobRunCreate
) -> tuple[SyncJob, IntegratedAccount]:
    """The job and account a run (or trigger) names; 404 or 400 when they do not fit."""
    job = get_job(session, environment_id=environment_id, job_id=data.sync_job_id)
    account = accounts.get_account(
        session, environment_id=environment_id, integrated_account_id=data.integrated_account_id
    )
    if account.integration_name != job.integration_name:
        raise invalid_request(
            f"integrated_account_id: the account is a {account.integration_name} account; "
            f"the job syncs {job.integration_name}"
        )
    if data.webhook_id is not None:
        webhook = session.get(Webhook, data.webhook_id)
        if webhook is None or webhook.environment_id != environment_id:
            raise invalid_request(f"webhook_id: no webhook {data.webhook_id}")
    return job, account


def create_run(
    session: Session,
    connection: redis.Redis | None,
    *,
    environment_id: str,
    data: SyncJobRunCreate,
    settings: Settings,
) -> SyncJobRun:
    """Record a queued run; once the transaction commits, admission hands it to the ``sync``
    queue when its environment has a free place (``connection`` None: the caller executes it
    itself at once, e.g. ``switchyard sync run``)."""
    job, account = check_run_request(session, environment_id=environment_id, data=data)
    accounts.ensure_enabled(session, account)
    _refuse_if_active(session, job_id=job.id, account_id=account.id)
    run = SyncJobRun(
        id=new_id("srun"),
        environment_id=environment_id,
        sync_job_id=job.id,
        integrated_account_id=account.id,
        webhook_id=data.webhook_id,
        resource_stats={r["resource"]: {"pages": 0, "records": 0, "errors": 0}
                        for r in job.resources},
        created_at=utcnow(),
        admitted_at=utcnow() if connection is None else None,
    )  # fmt: skip
    try:
        # A savepoint: a concurrent create that passed the check above loses at the unique
        # index instead, and the caller's transaction survives its 409.
        with session.begin_nested():
            session.add(run)
            session.flush()
    except IntegrityError as exc:
        if not _is_second_active_run(exc):
            raise
        _refuse_if_active(session, job_id=job.id, account_id=account.id)
        raise ApiError(409, "CONFLICT", "a run of this job and account is under way") from exc
    if connection is not None:
        admission.admit_after_commit(session, connection, settings, environment_id=environment_id)
    return run


# The partial unique index of one active run per job and account, as each database names it.
ONE_ACTIVE_INDEX = "uq_sync_job_run_one_active"
ONE_ACTIVE_COLUMNS = "sync_job_run.sync_job_id, sync_job_run.integrated_account_id"


def _refuse_if_active(session: Session, *, job_id: str, account_id: str) -> None:
    """409 naming the run of the job and account that is under way, if one is."""
    active = session.exec(
        select(SyncJobRun.id)
        .where(col(SyncJobRun.sync_job_id) == job_id)
        .where(col(SyncJobRun.integrated_account_id) == account_id)
        .where(col(SyncJobRun.status).in_(ACTIVE_STATES))
        .with_for_update()
    ).first()
    if active is not None:
        raise ApiError(409, "CONFLICT", f"run {active} of this job and account is under way")


def _is_second_active_run(exc: IntegrityError) -> bool:
    """Whether ``exc`` is the index that holds one active run per job and account
    (PostgreSQL names it; SQLite names its columns)."""
    message = str(exc.orig)
    return ONE_ACTIVE_INDEX in message or ONE_ACTIVE_COLUMNS in message


STOPPED = "stopped by request"


def stop_run(session: Session, *, run: SyncJobRun, settings: Settings) -> SyncJobRun:
    """Stop a queued or running run: it ends its worker's lease, so the run writes nothing
    more (not even the page under way); 409 once it has ended."""
    if run.status not in ACTIVE_STATES:
        raise ApiError(409, "CONFLICT", f"the run has already ended ({run.status})")
    # Conditional, so a run that ended since it was read (completed, reaped) stays as it ended.
    result = session.execute(
        sa.update(SyncJobRun)
        .where(col(SyncJobRun.id) == run.id, col(SyncJobRun.status).in_(ACTIVE_STATES))
        .values(status="stopped", error=STOPPED, finished_at=utcnow(),
                lease_token=col(SyncJobRun.lease_token) + 1)
        .execution_options(synchronize_session=False)
    )  # fmt: skip
    session.refresh(run)
    if cast("CursorResult[Any]", result).rowcount != 1:
        raise ApiError(409, "CONFLICT", f"the run has already ended ({run.status})")
    record_event(
        session,
        environment_id=run.environment_id,
        event_type="sync_job_run:failed",
        payload={"sync_job_run_id": run.id, "sync_job_id": run.sync_job_id,
                 "integrated_account_id": run.integrated_account_id,
                 "error": STOPPED, "resource_stats": run.resource_stats},
        settings=settings, webhook_id=run.webhook_id,
    )  # fmt: skip
    return run


def get_run(session: Session, *, environment_id: str, run_id: str) -> SyncJobRun:
    run = session.get(SyncJobRun, run_id)
    if run is None or run.environment_id != environment_id:
        raise not_found(f"sync job run {run_id}")
    return run


def list_runs(
    session: Session,
    *,
    environment_id: str,
    params: PageParams,
    sync_job_id: str | None,
    integrated_account_id: str | None,
    status: str | None,
) -> dict[str, Any]:
    if status is not None and status not in RUN_STATES:
        raise invalid_request(f"status: one of {', '.join(RUN_STATES)}")
    statement = select(SyncJobRun).where(col(SyncJobRun.environment_id) == environment_id)
    if sync_job_id is not None:
        statement = statement.where(col(SyncJobRun.sync_job_id) == sync_job_id)
    if integrated_account_id is not None:
        statement = statement.where(col(SyncJobRun.integrated_account_id) == integrated_account_id)
    if status is not None:
        statement = statement.where(col(SyncJobRun.status) == status)
    scope = f"sync-job-run:{environment_id}:{sync_job_id}:{integrated_account_id}:{status}"
    return paginate(
        session, statement, id_column=col(SyncJobRun.id), params=params, scope=scope,
        serialize=serialize_run, descending=True,
    )  # fmt: skip
