"""`switchyard db`: migrations and retention."""

from __future__ import annotations

import typer

from core.redaction import redact_url
from core.settings import get_settings
from platform_api.db import migrate

app = typer.Typer(help="Database migrations and retention.", no_args_is_help=True)


@app.command("upgrade")
def upgrade() -> None:
    """Apply every pending migration."""
    settings = get_settings()
    migrate(settings)
    typer.echo(f"database is up to date ({redact_url(settings.resolved_database_url)})")


@app.command("prune")
def prune() -> None:
    """Delete rows past their retention now (the scheduler also does it daily, 03:17 UTC)."""
    from platform_api.tasks.retention import prune as prune_rows

    settings = get_settings()
    deleted = prune_rows(settings)
    for table, count in deleted.items():
        typer.echo(f"{table}: {count} row(s) deleted")
