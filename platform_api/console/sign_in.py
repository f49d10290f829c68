"""Signing in and out of the console."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Depends, Request, Response

from core.settings import Settings
from platform_api.api.deps import SettingsDep, count_failed_check, refuse_throttled_caller
from platform_api.console import auth
from platform_api.console.pages import ConsoleRefusal, ConsoleRoute, redirect, render
from platform_api.db import session_scope
from platform_api.services import console_users
from platform_api.services.console_users import SignedIn

router = APIRouter(route_class=ConsoleRoute)

OptionalOperatorDep = Annotated[SignedIn | None, Depends(auth.optional_operator)]


def _form_page(request: Request, *, error: str | None = None, status_code: int = 200) -> Response:
    token = auth.sign_in_token(request)
    response = render(
        request, "sign_in.html", {"csrf_token": token, "error": error}, status_code=status_code
    )
    auth.set_sign_in_cookie(response, request, token)
    return response


@router.get("/sign-in")
def sign_in_page(request: Request, signed_in: OptionalOperatorDep) -> Response:
    if signed_in is not None:
        return redirect("/console")
    return _form_page(request)


def _start(
    settings: Settings, username: str, password: str, now: datetime, previous: str | None
) -> str | None:
    """The new session's secret for good credentials, else None; a session the browser
    still held ends (a sign-in never keeps an old session id)."""
    with session_scope(settings) as session:
        if previous:
            console_users.end_session(session, secret=previous)
        user = console_users.check_credentials(session, username=username, password=password)
        if user is None:
            return None
        lifetime = timedelta(hours=settings.console_session_hours)
        _, secret = console_users.start_session(session, user=user, now=now, lifetime=lifetime)
        return secret


@router.post("/sign-in")
async def sign_in(
    request: Request, form: auth.FormDep, settings: SettingsDep, now: auth.NowDep
) -> Response:
    """Check the operator's credentials; failures count against the caller's address like a
    failed API-token check (production mode)."""
    if not auth.tokens_match(request.cookies.get(auth.SIGN_IN_COOKIE), form.get("csrf_token")):
        raise ConsoleRefusal(403, "this form has expired or did not come from the console")
    refuse_throttled_caller(request)
    username = form.get("username", "").strip().lower()
    password = form.get("password", "")
    secret = await anyio.to_thread.run_sync(
        _start, settings, username, password, now, request.cookies.get(auth.SESSION_COOKIE)
    )
    if secret is None:
        await count_failed_check(request)
        return _form_page(request, error="Wrong username or password.", status_code=401)
    response = redirect("/console")
    auth.set_session_cookie(response, request, secret, settings)
    response.delete_cookie(auth.SIGN_IN_COOKIE, path=auth.SIGN_IN_COOKIE_PATH)
    return response


@router.post("/sign-out")
def sign_out(request: Request, signed_in: auth.CheckedFormDep, settings: SettingsDep) -> Response:
    with session_scope(settings) as session:
        console_users.end_session(session, secret=request.cookies[auth.SESSION_COOKIE])
    response = redirect(auth.SIGN_IN_COOKIE_PATH)
    auth.clear_session_cookie(response, request)
    return response
