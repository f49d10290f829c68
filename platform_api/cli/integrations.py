"""`switchyard integrations`: the catalog and the integrations installed per environment."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from core.errors import ApiError
from core.settings import get_settings
from platform_api.db import migrate, session_scope
from platform_api.integrations.catalog import get_catalog
from platform_api.services import installed_integrations as service
from platform_api.tables.environment import ENVIRONMENTS
from platform_api.tables.installed_integration import InstalledIntegrationUpdate

app = typer.Typer(help="Integrations: the catalog and what each environment has installed.")

EnvironmentOption = typer.Option("development", help="development, staging or production.")


def _check_environment(environment: str) -> None:
    if environment not in ENVIRONMENTS:
        raise typer.BadParameter(
            f"must be one of {', '.join(ENVIRONMENTS)}", param_hint="--environment"
        )


def _fail(exc: ApiError) -> typer.Exit:
    typer.echo(exc.message, err=True)
    return typer.Exit(1)


@app.command("catalog")
def catalog() -> None:
    """List every integration that can be installed."""
    table = Table("name", "label", "category", "auth")
    for manifest in get_catalog().values():
        scheme: str = manifest.auth.scheme
        if manifest.auth.oauth2 is not None and scheme != "oauth2":
            scheme += " or oauth2"
        table.add_row(manifest.name, manifest.label, manifest.category, scheme)
    Console().print(table)


@app.command("install")
def install(
    name: str = typer.Argument(..., help="Integration name from `integrations catalog`."),
    environment: str = EnvironmentOption,
) -> None:
    """Install an integration into an environment (enabled)."""
    _check_environment(environment)
    settings = get_settings()
    migrate(settings)
    try:
        with session_scope(settings) as session:
            row = service.install(session, environment_id=environment, integration_name=name)
    except ApiError as exc:
        raise _fail(exc) from exc
    typer.echo(f"installed {name} in {environment} as {row.id}")


@app.command("list")
def list_(environment: str = EnvironmentOption) -> None:
    """List the integrations installed in an environment."""
    _check_environment(environment)
    settings = get_settings()
    with session_scope(settings) as session:
        rows = service.list_all_installed(session, environment_id=environment)
        records = [service.serialize_installed(row, settings=settings) for row in rows]
    table = Table("id", "integration", "category", "enabled", "installed")
    for record in records:
        table.add_row(
            record["id"],
            record["integration"]["name"],
            record["integration"]["category"],
            "yes" if record["is_enabled"] else "no",
            record["created_at"] or "",
        )
    Console().print(table)


def _set_enabled(name: str, environment: str, enabled: bool) -> None:
    _check_environment(environment)
    settings = get_settings()
    try:
        with session_scope(settings) as session:
            row = service.find_installed(session, environment_id=environment, integration_name=name)
            if row is None:
                raise ApiError(404, "NOT_FOUND", f"{name} is not installed in {environment}")
            service.update_installed(
                session,
                row=row,
                update=InstalledIntegrationUpdate(is_enabled=enabled),
                settings=settings,
            )
    except ApiError as exc:
        raise _fail(exc) from exc
    typer.echo(f"{'enabled' if enabled else 'disabled'} {name} in {environment}")


@app.command("enable")
def enable(name: str = typer.Argument(...), environment: str = EnvironmentOption) -> None:
    """Enable an installed integration."""
    _set_enabled(name, environment, True)


@app.command("disable")
def disable(name: str = typer.Argument(...), environment: str = EnvironmentOption) -> None:
    """Disable an installed integration: no new connections, its accounts' calls refused."""
    _set_enabled(name, environment, False)
