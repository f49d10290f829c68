"""The console's sync section: jobs, recent runs (paged), a run's progress and stopping it,
and cron triggers with their next fire time. Everything through ``platform_api.sync``, as
the /v1 sync routes do."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response

from platform_api.api.deps import SessionDep, SettingsDep
from platform_api.console import (
    auth,
    relative_time,  # noqa: F401  (the templates' time filter)
)
from platform_api.console.pages import ConsoleRoute, redirect, render
from platform_api.pagination import MAX_LIMIT, PageParams, cursor_key
from platform_api.services.console_users import SignedIn
from platform_api.sync import admission, stats, triggers
from platform_api.sync import jobs as service
from platform_api.tables.sync import ACTIVE_STATES

router = APIRouter(route_class=ConsoleRoute)

RUNS_PER_PAGE = 20
# An active run's page reloads itself (an HTTP Refresh header: no script, CSP unchanged).
REFRESH_SECONDS = 5
NOTICES = {"stopped": "The run is stopped: it writes nothing more, not even the page under way."}
# The records chart's geometry (SVG user units), as the webhooks page's deliveries chart.
CHART_HEIGHT, BAR_WIDTH, BAR_GAP = 120, 20, 4


def records_chart(hours: list[tuple[datetime, int]]) -> dict[str, Any]:
    """Bars of records synced per hour, in the shape ``_bar_chart.html`` draws as inline SVG
    (no script: the page's Content-Security-Policy stays as it is)."""
    tallest = max((count for _, count in hours), default=0)
    scale = CHART_HEIGHT / tallest if tallest else 0.0
    bars = [
        {"x": index * (BAR_WIDTH + BAR_GAP), "y": round(CHART_HEIGHT - count * scale, 2),
         "height": round(count * scale, 2), "status": "records", "count": count,
         "hour": start.strftime("%Y-%m-%d %H:00 UTC")}
        for index, (start, count) in enumerate(hours) if count
    ]  # fmt: skip
    return {
        "bars": bars, "tallest": tallest, "height": CHART_HEIGHT, "bar_width": BAR_WIDTH,
        "width": len(hours) * (BAR_WIDTH + BAR_GAP), "statuses": ("records",),
        "first": hours[0][0] if hours else None,
        "total": {"records": sum(count for _, count in hours)},
    }  # fmt: skip


def _context(signed_in: SignedIn, environment: str, now: datetime, **extra: Any) -> dict[str, Any]:
    return {
        "operator": signed_in.user,
        "environment": environment,
        "csrf_token": signed_in.session.csrf_token,
        "section": "sync",
        "now": now,
        "active_states": ACTIVE_STATES,
        **extra,
    }


def _page(request: Request, limit: int, cursor: str | None) -> PageParams:
    return PageParams(
        limit=limit, next_cursor=cursor or None, cursor_key=cursor_key(request.app.state.settings)
    )


@router.get("/{environment}/sync")
def sync_overview(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    session: SessionDep,
    now: auth.NowDep,
    runs_after: str | None = None,
) -> Response:
    """Jobs, a page of runs (newest first), the cron triggers of the environment and its
    records synced per hour over the last 24 hours."""
    jobs = service.list_jobs(
        session, environment_id=environment, params=_page(request, MAX_LIMIT, None)
    )
    runs = service.list_runs(
        session, environment_id=environment, params=_page(request, RUNS_PER_PAGE, runs_after),
        sync_job_id=None, integrated_account_id=None, status=None,
    )  # fmt: skip
    cron = triggers.list_triggers(
        session, environment_id=environment, params=_page(request, MAX_LIMIT, None)
    )
    # The next fire time by the same function the service serializes with, from the
    # console's clock.
    next_fire = {t["id"]: triggers.next_run_at(t["cron_expression"], now) for t in cron["result"]}
    hours = stats.records_per_hour(session, environment_id=environment, now=now)
    context = _context(
        signed_in, environment, now, jobs=jobs, runs=runs, triggers=cron, next_fire=next_fire,
        first_page=runs_after is None, chart=records_chart(hours),
    )  # fmt: skip
    return render(request, "sync.html", context)


@router.get("/{environment}/sync/runs/{run_id}")
def sync_run_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    run_id: str,
    session: SessionDep,
    now: auth.NowDep,
    notice: str | None = None,
) -> Response:
    """One run: status, times, per-resource progress; refreshes itself while active."""
    run = service.serialize_run(service.get_run(session, environment_id=environment, run_id=run_id))
    active = run["status"] in ACTIVE_STATES
    context = _context(
        signed_in, environment, now, run=run, active=active, notice=NOTICES.get(notice or "")
    )
    headers = {"Refresh": str(REFRESH_SECONDS)} if active else None
    return render(request, "sync_run.html", context, headers=headers)


@router.get("/{environment}/sync/runs/{run_id}/stop")
def sync_run_stop_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    run_id: str,
    session: SessionDep,
    now: auth.NowDep,
) -> Response:
    """Ask before stopping: the form on this page does it."""
    run = service.serialize_run(service.get_run(session, environment_id=environment, run_id=run_id))
    return render(request, "sync_run_stop.html", _context(signed_in, environment, now, run=run))


@router.post("/{environment}/sync/runs/{run_id}/stop")
def sync_run_stop(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    run_id: str,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """Stop a queued or running run, as ``POST /v1/sync-job-run/{id}/stop`` does (the 409
    of an ended run shows as a page)."""
    run = service.get_run(session, environment_id=environment, run_id=run_id)
    service.stop_run(session, run=run, settings=settings)
    # Its place in the environment goes to the next waiting run.
    admission.admit_after_commit(
        session, request.app.state.redis, settings, environment_id=environment
    )
    return redirect(f"/console/{environment}/sync/runs/{run_id}?notice=stopped")
