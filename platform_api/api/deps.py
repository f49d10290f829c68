"""Dependencies shared by the routes: settings, database session, the authenticated caller."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request
from sqlmodel import Session

from core.errors import ApiError
from core.settings import Settings
from platform_api.db import get_engine, session_scope
from platform_api.services.tokens import Principal, authenticate


async def app_settings(request: Request) -> Settings:
    """The settings the app was built with (async: a sync dependency costs a thread hop)."""
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(app_settings)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    """One session per request; committed when the route returns without error."""
    with session_scope(settings) as session:
        yield session


# scope="function": commit when the route returns, before the response is sent, so a client
# never sees a success for a write that is not yet (or never) committed.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "UNAUTHORIZED", message, headers={"WWW-Authenticate": "Bearer"})


class Admission(Protocol):
    """A per-request check of an authenticated caller (e.g. a rate limit)."""

    async def admit(self, token_id: str, environment_id: str, *, cache: Any, breaker: Any) -> None:
        """Raise an ``ApiError`` to refuse the request; ``cache`` is the app's async Redis
        client (None: none configured), ``breaker`` its circuit breaker."""


def principal_dependency(
    admission: Admission | None = None,
) -> Callable[[Request, Settings], Awaitable[Principal]]:
    """A dependency that authenticates the caller, then applies ``admission`` if given."""

    async def dependency(request: Request, settings: SettingsDep) -> Principal:
        """Authenticate ``Authorization: Bearer <token>``; 401 ``UNAUTHORIZED`` otherwise."""
        header = request.headers.get("authorization")
        if not header:
            raise _unauthorized("missing Authorization header (expected: Bearer <API token>)")
        scheme, _, secret = header.partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret or " " in secret:
            raise _unauthorized("malformed Authorization header (expected: Bearer <API token>)")
        engine = get_engine(settings)
        cache = getattr(request.app.state, "aredis", None)
        breaker = getattr(request.app.state, "redis_breaker", None)
        # Async: every request passes here, and a thread-pool hop per request shows in
        # throughput.
        principal = await authenticate(
            lambda: Session(engine),
            secret,
            cache=cache,
            cache_seconds=settings.auth_cache_seconds,
            breaker=breaker,
            local=getattr(request.app.state, "token_cache", None),
        )
        if principal is None:
            raise _unauthorized("invalid, revoked or expired API token")
        request.state.principal = principal
        if admission is not None:
            await admission.admit(
                principal.token_id, principal.environment_id, cache=cache, breaker=breaker
            )
        return principal

    return dependency


require_principal = principal_dependency()


CurrentPrincipal = Annotated[Principal, Depends(require_principal)]
