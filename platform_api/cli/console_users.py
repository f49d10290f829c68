"""`switchyard console-users`: the operators who may sign in to the console (/console)."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.table import Table

from core.errors import ApiError
from core.settings import get_settings
from platform_api.db import migrate, session_scope
from platform_api.services import console_users
from platform_api.tables.common import isoformat

app = typer.Typer(
    help="Console operators (each sees only their environments).", no_args_is_help=True
)


def _password_from_stdin() -> str:
    password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise typer.BadParameter("no password on standard input", param_hint="--password-stdin")
    return password


def _fail(exc: ApiError) -> typer.Exit:
    typer.echo(exc.message, err=True)
    return typer.Exit(1)


@app.command("add")
def add(
    username: str = typer.Argument(..., help="The operator's sign-in name."),
    environment: list[str] = typer.Option(
        ..., "--environment", help="An environment the operator may see (repeat for more)."
    ),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the password from standard input."
    ),
) -> None:
    """Create an operator and print a generated password once (unless --password-stdin)."""
    settings = get_settings()
    migrate(settings)
    password = _password_from_stdin() if password_stdin else None
    try:
        with session_scope(settings) as session:
            user, password = console_users.create_user(
                session, username=username, environments=environment, password=password
            )
    except ApiError as exc:
        raise _fail(exc) from exc
    if not password_stdin:
        typer.echo(password)
    typer.echo(
        f"added {user.username} for {', '.join(user.environments)}"
        + ("" if password_stdin else " — the password above is shown only now"),
        err=True,
    )


@app.command("list")
def list_() -> None:
    """List operators (never their passwords)."""
    with session_scope(get_settings()) as session:
        users = console_users.list_users(session)
    table = Table("username", "environments", "created", "disabled")
    for user in users:
        table.add_row(
            user.username, ", ".join(user.environments), isoformat(user.created_at) or "",
            isoformat(user.disabled_at) or "",
        )  # fmt: skip
    Console().print(table)


@app.command("remove")
def remove(username: str = typer.Argument(..., help="The operator to remove.")) -> None:
    """Remove an operator; their sessions end at once."""
    try:
        with session_scope(get_settings()) as session:
            console_users.remove_user(session, username=username)
    except ApiError as exc:
        raise _fail(exc) from exc
    typer.echo(f"removed {username}")


@app.command("reset-password")
def reset_password(
    username: str = typer.Argument(..., help="The operator whose password to replace."),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the new password from standard input."
    ),
) -> None:
    """Replace an operator's password (printed once unless --password-stdin); their sessions
    end at once."""
    password = _password_from_stdin() if password_stdin else None
    try:
        with session_scope(get_settings()) as session:
            password = console_users.reset_password(session, username=username, password=password)
    except ApiError as exc:
        raise _fail(exc) from exc
    if not password_stdin:
        typer.echo(password)
    typer.echo(f"reset the password of {username}; their sessions have ended", err=True)
