"""`switchyard tokens`: create, list and revoke API tokens."""

from __future__ import annotations

import redis
import typer
from rich.console import Console
from rich.table import Table

from core.errors import ApiError
from core.redis_url import get_redis_url
from core.settings import Settings, get_settings
from platform_api.db import migrate, session_scope
from platform_api.services import tokens as token_service
from platform_api.tables.common import isoformat

app = typer.Typer(help="API tokens (each scoped to one environment).", no_args_is_help=True)

# `tokens revoke`: revoked in the database, but the fronts' caches were not told (Redis failed).
EXIT_NOT_ANNOUNCED = 3
# A Redis that does not answer must not hang the command: it reports and exits instead.
REDIS_TIMEOUT_S = 5.0


@app.command("create")
def create(
    environment: str = typer.Option("development", help="development, staging or production."),
    name: str = typer.Option("", help="A label to recognise the token by."),
    expires_in: str | None = typer.Option(None, help="Lifetime such as 30d, 12h or 45m."),
) -> None:
    """Create a token and print its secret once."""
    settings = get_settings()
    migrate(settings)
    try:
        lifetime = token_service.parse_duration(expires_in) if expires_in else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--expires-in") from exc
    try:
        with session_scope(settings) as session:
            token, secret = token_service.create_token(
                session, environment=environment, name=name, expires_in=lifetime
            )
    except ApiError as exc:
        raise typer.BadParameter(exc.message, param_hint="--environment") from exc
    typer.echo(secret)
    typer.echo(
        f"created {token.id} for {environment}"
        + (f", expires {isoformat(token.expires_at)}" if token.expires_at else "")
        + " — the secret above is shown only now",
        err=True,
    )


@app.command("list")
def list_(environment: str | None = typer.Option(None, help="Only this environment.")) -> None:
    """List tokens (never their secrets)."""
    with session_scope(get_settings()) as session:
        rows = token_service.list_tokens(session, environment=environment)
    table = Table("id", "environment", "name", "prefix", "created", "expires", "revoked")
    for t in rows:
        table.add_row(
            t.id, t.environment_id, t.name, t.prefix + "…", isoformat(t.created_at) or "",
            isoformat(t.expires_at) or "never", isoformat(t.revoked_at) or "",
        )  # fmt: skip
    Console().print(table)


@app.command("revoke")
def revoke(token_id: str = typer.Argument(..., help="The token id (tok_…).")) -> None:
    """Revoke a token; it stops working at once. Exit status 3: revoked, but Redis did not
    answer, so fronts may accept it until their caches expire (run the command again)."""
    settings = get_settings()
    try:
        with session_scope(settings) as session:
            revocation = token_service.revoke_token(
                session, token_id=token_id, cache=_redis(settings), settings=settings
            )
    except ApiError as exc:
        typer.echo(exc.message, err=True)
        raise typer.Exit(1) from exc
    if not revocation.announced:
        typer.echo(
            f"warning: {token_id} is revoked in the database, but Redis did not answer, so "
            f"API fronts may still accept it from their caches for up to "
            f"{revocation.stale_for_s} s. Run `switchyard tokens revoke {token_id}` again once "
            "Redis answers to make it stop working at once.",
            err=True,
        )
        raise typer.Exit(EXIT_NOT_ANNOUNCED)
    typer.echo(f"revoked {token_id}")


def _redis(settings: Settings) -> redis.Redis:
    return redis.Redis.from_url(
        get_redis_url(settings),
        socket_connect_timeout=REDIS_TIMEOUT_S,
        socket_timeout=REDIS_TIMEOUT_S,
    )
