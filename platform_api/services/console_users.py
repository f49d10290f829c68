"""Console operators: passwords (salted scrypt, stdlib only), sign-in sessions, and the
environments each operator may see."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session, col, delete, select

from core.errors import conflict, invalid_request, not_found
from platform_api.ids import new_id
from platform_api.tables.common import as_utc
from platform_api.tables.console_user import USERNAME_MAX_LENGTH, ConsoleSession, ConsoleUser
from platform_api.tables.environment import ENVIRONMENTS

# scrypt's cost: 16 MiB and ~50 ms a check, which bounds guessing with the failed-auth throttle.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
PASSWORD_MIN_LENGTH = 12
PASSWORD_MAX_LENGTH = 1024
USERNAME_PATTERN = re.compile(rf"^[a-z0-9][a-z0-9._@-]{{0,{USERNAME_MAX_LENGTH - 1}}}$")


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """The stored form of ``password``: a salted scrypt hash with its parameters."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored`` (compared in constant time)."""
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(
            password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p)
        )
    except ValueError:
        return False
    return hmac.compare_digest(digest.hex(), expected)


# Checked when the username is unknown, so a wrong name costs as long as a wrong password.
_DUMMY_HASH = hash_password("not a password", salt=b"\0" * 16)


def generate_password() -> str:
    return secrets.token_urlsafe(18)


def _check_password(password: str) -> None:
    if not PASSWORD_MIN_LENGTH <= len(password) <= PASSWORD_MAX_LENGTH:
        raise invalid_request(
            f"password: {PASSWORD_MIN_LENGTH} to {PASSWORD_MAX_LENGTH} characters"
        )


def _check_environments(environments: Sequence[str]) -> list[str]:
    chosen = list(dict.fromkeys(environments))
    unknown = [e for e in chosen if e not in ENVIRONMENTS]
    if not chosen or unknown:
        raise invalid_request(f"environment: one or more of {', '.join(ENVIRONMENTS)}")
    return chosen


def get_user(session: Session, *, username: str) -> ConsoleUser:
    user = session.exec(select(ConsoleUser).where(ConsoleUser.username == username)).first()
    if user is None:
        raise not_found(f"console user {username}")
    return user


def create_user(
    session: Session, *, username: str, environments: Sequence[str], password: str | None = None
) -> tuple[ConsoleUser, str]:
    """Create an operator; returns the row and the password (generated unless given)."""
    if not USERNAME_PATTERN.match(username):
        raise invalid_request(
            f"username: 1 to {USERNAME_MAX_LENGTH} of a-z 0-9 . _ @ -, starting with a letter "
            "or digit"
        )
    chosen = _check_environments(environments)
    password = password if password is not None else generate_password()
    _check_password(password)
    if session.exec(select(ConsoleUser.id).where(ConsoleUser.username == username)).first():
        raise conflict(f"console user {username} exists")
    user = ConsoleUser(
        id=new_id("opr"),
        username=username,
        password_hash=hash_password(password),
        environments=chosen,
    )
    session.add(user)
    session.flush()
    return user, password


def list_users(session: Session) -> list[ConsoleUser]:
    return list(session.exec(select(ConsoleUser).order_by(ConsoleUser.username)).all())


def _end_sessions_of(session: Session, user_id: str) -> None:
    session.exec(delete(ConsoleSession).where(col(ConsoleSession.user_id) == user_id))


def remove_user(session: Session, *, username: str) -> None:
    """Delete an operator and end every session of theirs."""
    user = get_user(session, username=username)
    _end_sessions_of(session, user.id)
    session.delete(user)
    session.flush()


def reset_password(session: Session, *, username: str, password: str | None = None) -> str:
    """Set a new password (generated unless given) and end every session of the operator."""
    user = get_user(session, username=username)
    password = password if password is not None else generate_password()
    _check_password(password)
    user.password_hash = hash_password(password)
    session.add(user)
    _end_sessions_of(session, user.id)
    session.flush()
    return password


def check_credentials(session: Session, *, username: str, password: str) -> ConsoleUser | None:
    """The enabled operator with this username and password, else None."""
    user = session.exec(select(ConsoleUser).where(ConsoleUser.username == username)).first()
    matches = verify_password(password, user.password_hash if user else _DUMMY_HASH)
    if user is None or not matches or user.disabled_at is not None:
        return None
    return user


def hash_session_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class SignedIn:
    """A live console session and its operator."""

    user: ConsoleUser
    session: ConsoleSession


def start_session(
    session: Session, *, user: ConsoleUser, now: datetime, lifetime: timedelta
) -> tuple[ConsoleSession, str]:
    """A new session for ``user``; returns the row and the secret for the cookie (never
    stored)."""
    secret = secrets.token_urlsafe(32)
    row = ConsoleSession(
        id=hash_session_secret(secret),
        user_id=user.id,
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        expires_at=now + lifetime,
    )
    session.add(row)
    session.flush()
    return row, secret


def find_session(session: Session, *, secret: str, now: datetime) -> SignedIn | None:
    """The live session a cookie secret names; an expired one is deleted on the way."""
    row = session.get(ConsoleSession, hash_session_secret(secret))
    if row is None:
        return None
    expires_at = as_utc(row.expires_at)
    if expires_at is None or expires_at <= now:
        session.delete(row)
        return None
    user = session.get(ConsoleUser, row.user_id)
    if user is None or user.disabled_at is not None:
        return None
    return SignedIn(user=user, session=row)


def end_session(session: Session, *, secret: str) -> None:
    row = session.get(ConsoleSession, hash_session_secret(secret))
    if row is not None:
        session.delete(row)
