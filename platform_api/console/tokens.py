"""The console's API tokens section: list, create (the secret shown once), revoke."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import redis
import structlog
from fastapi import APIRouter, Request, Response

from platform_api.api.deps import SessionDep, SettingsDep
from platform_api.console import auth
from platform_api.console.pages import ConsoleRefusal, ConsoleRoute, redirect, render
from platform_api.console.relative_time import ago_for
from platform_api.services import tokens as token_service
from platform_api.services.console_users import SignedIn
from platform_api.services.token_usage import last_used

log = structlog.get_logger(__name__)

router = APIRouter(route_class=ConsoleRoute)

# What a redirect back to the list may announce (a fixed text: nothing from the URL is shown).
NOTICES = {
    "revoked": "The token is revoked: it stopped working at once.",
    "revoked-not-announced": (
        "The token is revoked in the database, but Redis did not answer: API fronts may accept "
        "it from their caches for a short while. Revoke it again once Redis answers."
    ),
}


def _page_context(signed_in: SignedIn, environment: str, **extra: Any) -> dict[str, Any]:
    return {
        "operator": signed_in.user,
        "environment": environment,
        "csrf_token": signed_in.session.csrf_token,
        "section": "tokens",
        **extra,
    }


@router.get("/{environment}/tokens")
def token_list(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    session: SessionDep,
    now: auth.NowDep,
    notice: str | None = None,
) -> Response:
    tokens = token_service.list_tokens(session, environment=environment)
    used: dict[str, datetime] | None
    try:
        used = last_used(request.app.state.redis, [token.id for token in tokens])
    except redis.RedisError as exc:
        log.warning("token_last_used_unavailable", error=type(exc).__name__)
        used = None  # shown as "unknown"
    context = _page_context(
        signed_in, environment,
        tokens=tokens, last_used=used, ago=ago_for(now), notice=NOTICES.get(notice or ""),
    )  # fmt: skip
    return render(request, "tokens.html", context)


@router.post("/{environment}/tokens")
def token_create(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    form: auth.FormDep,
    session: SessionDep,
) -> Response:
    expires_in = form.get("expires_in", "").strip()
    try:
        lifetime = token_service.parse_duration(expires_in) if expires_in else None
    except ValueError as exc:
        raise ConsoleRefusal(400, str(exc)) from exc
    token, secret = token_service.create_token(
        session, environment=environment, name=form.get("name", "").strip(), expires_in=lifetime
    )
    context = _page_context(signed_in, environment, token=token, secret=secret)
    return render(request, "token_created.html", context, status_code=201)


@router.get("/{environment}/tokens/{token_id}/revoke")
def token_revoke_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    token_id: str,
    session: SessionDep,
) -> Response:
    """Ask before revoking: the form on this page does it."""
    token = token_service.get_token(session, token_id=token_id, environment=environment)
    return render(request, "token_revoke.html", _page_context(signed_in, environment, token=token))


@router.post("/{environment}/tokens/{token_id}/revoke")
def token_revoke(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    token_id: str,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    token_service.get_token(session, token_id=token_id, environment=environment)
    revocation = token_service.revoke_token(
        session, token_id=token_id, cache=request.app.state.redis, settings=settings
    )
    # The revocation is announced once the transaction commits, so commit here.
    session.commit()
    notice = "revoked" if revocation.announced else "revoked-not-announced"
    return redirect(f"/console/{environment}/tokens?notice={notice}")
