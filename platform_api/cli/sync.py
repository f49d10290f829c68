"""`switchyard sync run`: execute a sync job for an account in the foreground."""

from __future__ import annotations

import asyncio

import typer
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn

from core.errors import ApiError
from core.settings import get_settings
from platform_api.db import migrate, session_scope

app = typer.Typer(help="Sync jobs.", no_args_is_help=True)


@app.command("run")
def run(
    job_id: str = typer.Argument(..., help="The sync job (sjob_…)."),
    account: str = typer.Option(..., "--account", help="The integrated account (acct_…)."),
    environment: str = typer.Option("development", help="The job's and account's environment."),
    webhook: str | None = typer.Option(None, help="A webhook to send the run's events to."),
) -> None:
    """Run the job now, here (not on a worker), with a progress line per resource; it is
    recorded and reported like any run."""
    from platform_api.services.api_log_writer import flush_api_log
    from platform_api.sync.jobs import create_run, serialize_run
    from platform_api.sync.runner import execute_run
    from platform_api.tables.sync import SyncJobRun, SyncJobRunCreate

    settings = get_settings()
    migrate(settings)
    data = SyncJobRunCreate(sync_job_id=job_id, integrated_account_id=account, webhook_id=webhook)
    try:
        with session_scope(settings) as session:
            run_id = create_run(
                session, None, environment_id=environment, data=data, settings=settings
            ).id
    except ApiError as exc:
        typer.echo(f"{exc.code}: {exc.message}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"run {run_id}", err=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}")) as progress:
        tasks: dict[str, TaskID] = {}
        totals: dict[str, int] = {}

        def on_page(resource: str, page: int, records: int) -> None:
            totals[resource] = totals.get(resource, 0) + records
            line = f"{resource}: {page} page(s) of this listing, {totals[resource]} record(s)"
            if resource not in tasks:
                tasks[resource] = progress.add_task(line, total=None)
            progress.update(tasks[resource], description=line)

        try:
            asyncio.run(execute_run(settings, run_id, on_page))
        finally:
            flush_api_log(settings)
    with session_scope(settings) as session:
        final = session.get(SyncJobRun, run_id)
        assert final is not None
        result = serialize_run(final)
    typer.echo(f"{result['status']}: {result['resource_stats']}")
    if result["status"] != "completed":
        typer.echo(result["error"] or "", err=True)
        raise typer.Exit(1)
