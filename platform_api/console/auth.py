"""Who is signed in to the console: the session cookie, the CSRF check of every form, the
environments an operator may see, and the clock sessions expire by."""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime, timedelta
from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import Depends, Request, Response

from core.settings import Settings
from platform_api.api.deps import SessionDep
from platform_api.console.pages import (
    COOKIE_PATH,
    SESSION_COOKIE,
    ConsoleRefusal,
    SignInRequired,
)
from platform_api.services.console_users import SignedIn, find_session
from platform_api.tables.common import utcnow

# Before a session exists, the sign-in form's CSRF token is a cookie of its own (double submit).
SIGN_IN_COOKIE = "sy_console_sign_in"
SIGN_IN_COOKIE_PATH = "/console/sign-in"
MAX_FORM_FIELDS = 20


def console_now() -> datetime:
    """The time sessions are started and expire by (tests override this dependency)."""
    return utcnow()


NowDep = Annotated[datetime, Depends(console_now)]


async def form_fields(request: Request) -> dict[str, str]:
    """The fields of a URL-encoded form post (the first value of each)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != (
        "application/x-www-form-urlencoded"
    ):
        raise ConsoleRefusal(415, "expected a form post")
    body = (await request.body()).decode("utf-8", errors="replace")
    try:
        pairs = parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError as exc:
        raise ConsoleRefusal(400, "too many form fields") from exc
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields


FormDep = Annotated[dict[str, str], Depends(form_fields)]


def optional_operator(request: Request, session: SessionDep, now: NowDep) -> SignedIn | None:
    """The live session of the request's cookie, else None."""
    secret = request.cookies.get(SESSION_COOKIE)
    return find_session(session, secret=secret, now=now) if secret else None


def current_operator(signed_in: Annotated[SignedIn | None, Depends(optional_operator)]) -> SignedIn:
    """The signed-in operator; the sign-in page otherwise (expired sessions included)."""
    if signed_in is None:
        raise SignInRequired()
    return signed_in


OperatorDep = Annotated[SignedIn, Depends(current_operator)]


def tokens_match(expected: str | None, given: str | None) -> bool:
    return bool(expected and given) and hmac.compare_digest(
        (expected or "").encode(), (given or "").encode()
    )


def checked_form(signed_in: OperatorDep, form: FormDep) -> SignedIn:
    """The signed-in operator of a form post carrying their session's CSRF token; 403 else."""
    if not tokens_match(signed_in.session.csrf_token, form.get("csrf_token")):
        raise ConsoleRefusal(403, "this form has expired or did not come from the console")
    return signed_in


CheckedFormDep = Annotated[SignedIn, Depends(checked_form)]


def visible_environment(environment: str, signed_in: OperatorDep) -> str:
    """The environment a page names, if its operator may see it; 404 as for anything absent."""
    if environment not in signed_in.user.environments:
        raise ConsoleRefusal(404, f"environment {environment} not found")
    return environment


EnvironmentDep = Annotated[str, Depends(visible_environment)]


def _secure(request: Request) -> bool:
    # uvicorn sets the scheme from X-Forwarded-Proto for the proxies it trusts.
    return request.url.scheme == "https"


def set_session_cookie(
    response: Response, request: Request, secret: str, settings: Settings
) -> None:
    lifetime = timedelta(hours=settings.console_session_hours)
    response.set_cookie(
        SESSION_COOKIE, secret, max_age=int(lifetime.total_seconds()), path=COOKIE_PATH,
        httponly=True, samesite="strict", secure=_secure(request),
    )  # fmt: skip


def clear_session_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(
        SESSION_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict",
        secure=_secure(request),
    )  # fmt: skip


def sign_in_token(request: Request) -> str:
    """The sign-in form's CSRF token: the browser's, or a new one."""
    return request.cookies.get(SIGN_IN_COOKIE) or secrets.token_urlsafe(32)


def set_sign_in_cookie(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        SIGN_IN_COOKIE, token, path=SIGN_IN_COOKIE_PATH, httponly=True, samesite="strict",
        secure=_secure(request),
    )  # fmt: skip
