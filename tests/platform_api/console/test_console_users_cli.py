"""`switchyard console-users`: add (password printed once or read from stdin), list, remove,
reset-password; and the console tables match their migration."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlmodel import SQLModel
from typer.testing import CliRunner

from core.settings import get_settings
from platform_api.db import get_engine, session_scope
from platform_api.services.console_users import get_user, verify_password
from switchyard.cli import app as cli
from tests.platform_api.console.conftest import PASSWORD, Clock, sign_in

pytestmark = pytest.mark.db

runner = CliRunner()


def _add(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["console-users", "add", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_add_prints_a_generated_password_once_that_signs_in(
    client: TestClient, clock: Clock
) -> None:
    code, out, err = _add("alice", "--environment", "development", "--environment", "staging")
    assert code == 0, err
    password = out.strip()
    assert len(password) >= 20 and "\n" not in password
    assert "shown only now" in err
    with session_scope(get_settings()) as session:
        user = get_user(session, username="alice")
        assert user.environments == ["development", "staging"]
        assert password not in user.password_hash and user.password_hash.startswith("scrypt$")
    assert sign_in(client, "alice", password).status_code == 303


def test_add_reads_the_password_from_stdin(db: None) -> None:
    code, out, err = _add("bob", "--environment", "staging", "--password-stdin", stdin=PASSWORD)
    assert code == 0, err
    assert out == ""  # nothing to show
    with session_scope(get_settings()) as session:
        assert verify_password(PASSWORD, get_user(session, username="bob").password_hash)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["carol", "--environment", "moon"], "environment"),
        (["Carol!", "--environment", "development"], "username"),
    ],
)
def test_add_refuses_bad_input(db: None, args: list[str], message: str) -> None:
    code, _, err = _add(*args)
    assert code == 1 and message in err


def test_add_refuses_a_taken_username_and_a_short_password(db: None) -> None:
    assert _add("dave", "--environment", "development")[0] == 0
    code, _, err = _add("dave", "--environment", "development")
    assert code == 1 and "exists" in err
    code, _, err = _add("erin", "--environment", "development", "--password-stdin", stdin="short")
    assert code == 1 and "password" in err


def test_list_shows_operators_without_passwords(db: None) -> None:
    _add("frank", "--environment", "production", "--password-stdin", stdin=PASSWORD)
    result = runner.invoke(cli, ["console-users", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "frank" in result.stdout and "production" in result.stdout
    assert PASSWORD not in result.stdout and "scrypt" not in result.stdout


def test_remove_ends_the_operators_sessions(client: TestClient, clock: Clock) -> None:
    _add("gina", "--environment", "development", "--password-stdin", stdin=PASSWORD)
    assert sign_in(client, "gina").status_code == 303
    assert client.get("/console/development/tokens").status_code == 200
    result = runner.invoke(cli, ["console-users", "remove", "gina"])
    assert result.exit_code == 0 and "removed gina" in result.stdout
    gone = client.get("/console/development/tokens", follow_redirects=False)
    assert gone.headers["location"] == "/console/sign-in"
    assert sign_in(client, "gina").status_code == 401
    missing = runner.invoke(cli, ["console-users", "remove", "gina"])
    assert missing.exit_code == 1 and "not found" in missing.stderr


def test_reset_password_replaces_it_and_ends_sessions(client: TestClient, clock: Clock) -> None:
    _add("hank", "--environment", "development", "--password-stdin", stdin=PASSWORD)
    assert sign_in(client, "hank").status_code == 303
    result = runner.invoke(cli, ["console-users", "reset-password", "hank"])
    assert result.exit_code == 0, result.stderr
    new_password = result.stdout.strip()
    signed_out = client.get("/console/development/tokens", follow_redirects=False)
    assert signed_out.headers["location"] == "/console/sign-in"
    assert sign_in(client, "hank").status_code == 401
    assert sign_in(client, "hank", new_password).status_code == 303


def test_console_tables_match_their_migration(db: None) -> None:
    with get_engine(get_settings()).connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diffs = compare_metadata(context, SQLModel.metadata)
    assert [d for d in diffs if "console_" in repr(d)] == []
