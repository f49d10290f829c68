"""/sync-job and /sync-job-run: what to copy for an account, and the runs that copy it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, status

from platform_api.api.deps import CurrentPrincipal, SessionDep, SettingsDep
from platform_api.pagination import PageParamsDep
from platform_api.sync import admission, triggers
from platform_api.sync import jobs as service
from platform_api.tables.sync import (
    RunStatus,
    SyncJobCreate,
    SyncJobCronTriggerCreate,
    SyncJobRunCreate,
)

router = APIRouter(tags=["Sync jobs"])


@router.post("/sync-job", status_code=status.HTTP_201_CREATED)
def create_sync_job(
    body: SyncJobCreate, session: SessionDep, principal: CurrentPrincipal
) -> dict[str, Any]:
    """Create a job: unified resources of one integration, in `depends_on` order."""
    job = service.create_job(session, environment_id=principal.environment_id, data=body)
    session.flush()
    return service.serialize_job(job)


@router.get("/sync-job")
def list_sync_jobs(
    session: SessionDep, principal: CurrentPrincipal, page: PageParamsDep
) -> dict[str, Any]:
    return service.list_jobs(session, environment_id=principal.environment_id, params=page)


@router.get("/sync-job/{job_id}")
def get_sync_job(job_id: str, session: SessionDep, principal: CurrentPrincipal) -> dict[str, Any]:
    job = service.get_job(session, environment_id=principal.environment_id, job_id=job_id)
    return service.serialize_job(job)


@router.delete("/sync-job/{job_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_sync_job(
    job_id: str, request: Request, session: SessionDep, principal: CurrentPrincipal
) -> Response:
    """Delete the job and its cron triggers; a run already under way finishes."""
    job = service.get_job(session, environment_id=principal.environment_id, job_id=job_id)
    triggers.cancel_after_commit(
        session, request.app.state.redis, triggers.triggers_of_job(session, job.id)
    )
    service.delete_job(session, job=job)
    return Response(status_code=204)


@router.post("/sync-job-run", status_code=status.HTTP_201_CREATED)
def create_sync_job_run(
    body: SyncJobRunCreate,
    request: Request,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Queue a run of the job for the account; 409 while another run of both is under way.
    It starts when its environment has a place (`SWITCHYARD_SYNC_MAX_RUNS_PER_ENVIRONMENT`)."""
    run = service.create_run(
        session, request.app.state.redis, environment_id=principal.environment_id, data=body,
        settings=settings,
    )  # fmt: skip
    return service.serialize_run(run)


@router.get("/sync-job-run")
def list_sync_job_runs(
    session: SessionDep,
    principal: CurrentPrincipal,
    page: PageParamsDep,
    sync_job_id: Annotated[str | None, Query(max_length=40)] = None,
    integrated_account_id: Annotated[str | None, Query(max_length=40)] = None,
    run_status: Annotated[RunStatus | None, Query(alias="status")] = None,
) -> dict[str, Any]:
    """Runs, newest first, optionally of one job, account or status."""
    return service.list_runs(
        session, environment_id=principal.environment_id, params=page,
        sync_job_id=sync_job_id, integrated_account_id=integrated_account_id, status=run_status,
    )  # fmt: skip


@router.post("/sync-job-run/{run_id}/stop")
def stop_sync_job_run(
    run_id: str,
    request: Request,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Stop a queued or running run before its next page (409 once it has ended)."""
    run = service.get_run(session, environment_id=principal.environment_id, run_id=run_id)
    stopped = service.stop_run(session, run=run, settings=settings)
    # Its place in the environment goes to the next waiting run.
    admission.admit_after_commit(
        session, request.app.state.redis, settings, environment_id=principal.environment_id
    )
    return service.serialize_run(stopped)


@router.get("/sync-job-run/{run_id}")
def get_sync_job_run(
    run_id: str, session: SessionDep, principal: CurrentPrincipal
) -> dict[str, Any]:
    run = service.get_run(session, environment_id=principal.environment_id, run_id=run_id)
    return service.serialize_run(run)


@router.post("/sync-job-cron-trigger", status_code=status.HTTP_201_CREATED)
def create_sync_job_cron_trigger(
    body: SyncJobCronTriggerCreate,
    request: Request,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Run the job for the account on a cron schedule (five fields, UTC, at most every
    `SWITCHYARD_SYNC_CRON_MIN_INTERVAL_S`); the answer carries `next_run_at`."""
    trigger = triggers.create_trigger(
        session, request.app.state.redis, environment_id=principal.environment_id, data=body,
        settings=settings,
    )  # fmt: skip
    session.flush()
    return triggers.serialize(trigger)


@router.get("/sync-job-cron-trigger")
def list_sync_job_cron_triggers(
    session: SessionDep, principal: CurrentPrincipal, page: PageParamsDep
) -> dict[str, Any]:
    return triggers.list_triggers(session, environment_id=principal.environment_id, params=page)


@router.get("/sync-job-cron-trigger/{trigger_id}")
def get_sync_job_cron_trigger(
    trigger_id: str, session: SessionDep, principal: CurrentPrincipal
) -> dict[str, Any]:
    trigger = triggers.get_trigger(
        session, environment_id=principal.environment_id, trigger_id=trigger_id
    )
    return triggers.serialize(trigger)


@router.delete("/sync-job-cron-trigger/{trigger_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_sync_job_cron_trigger(
    trigger_id: str, request: Request, session: SessionDep, principal: CurrentPrincipal
) -> Response:
    """Delete the trigger; its schedule stops."""
    trigger = triggers.get_trigger(
        session, environment_id=principal.environment_id, trigger_id=trigger_id
    )
    triggers.delete_trigger(session, request.app.state.redis, trigger=trigger)
    return Response(status_code=204)
