"""`switchyard db`: database migrations."""

from __future__ import annotations

import typer

from core.redaction import redact_url
from core.settings import get_settings
from platform_api.db import migrate

app = typer.Typer(help="Database migrations.", no_args_is_help=True)


@app.command("upgrade")
def upgrade() -> None:
    """Apply every pending migration."""
    settings = get_settings()
    migrate(settings)
    typer.echo(f"database is up to date ({redact_url(settings.resolved_database_url)})")
