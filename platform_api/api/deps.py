"""Dependencies shared by the routes: settings, database session, the authenticated caller."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request
from sqlmodel import Session

from core.errors import ApiError
from core.settings import Settings
from platform_api.api.auth_throttle import AuthFailureThrottle, client_address
from platform_api.db import get_engine, session_scope
from platform_api.services.token_usage import recorder_for
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


def bearer_secret(header: str | None) -> str | None:
    """The secret of ``Authorization: Bearer <secret>``; None when malformed or absent."""
    scheme, _, secret = (header or "").partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret or " " in secret:
        return None
    return secret


async def _lookup(request: Request, settings: Settings, secret: str) -> Principal | None:
    engine = get_engine(settings)
    # Async: every request passes here, and a thread-pool hop per request shows in throughput.
    return await authenticate(
        lambda: Session(engine),
        secret,
        cache=getattr(request.app.state, "aredis", None),
        cache_seconds=settings.auth_cache_seconds,
        breaker=getattr(request.app.state, "redis_breaker", None),
        local=getattr(request.app.state, "token_cache", None),
    )


def _throttle(request: Request) -> AuthFailureThrottle | None:
    throttle: AuthFailureThrottle | None = getattr(request.app.state, "auth_throttle", None)
    return throttle


def refuse_throttled_caller(request: Request) -> None:
    """429 for an address past its failed checks, before any secret is compared, so a good
    guess is refused like a bad one (no throttle outside production mode: nothing)."""
    throttle = _throttle(request)
    if throttle is not None and throttle.blocked(client_address(request)):
        raise throttle.refusal()


async def count_failed_check(request: Request) -> None:
    """Count a failed secret check (API or metrics token) of the caller's address; 429 once
    it is over the limit."""
    throttle = _throttle(request)
    if throttle is None:
        return
    over = await throttle.record_failure(
        client_address(request),
        cache=getattr(request.app.state, "aredis", None),
        breaker=getattr(request.app.state, "redis_breaker", None),
    )
    if over:
        raise throttle.refusal()


async def checked_principal(request: Request, settings: Settings, secret: str) -> Principal:
    """The principal of ``secret``; 429 for an address past its failed checks (before the
    token is even looked up, so a good guess is refused like a bad one), 401 otherwise."""
    refuse_throttled_caller(request)
    principal = await _lookup(request, settings, secret)
    if principal is None:
        await count_failed_check(request)
        raise _unauthorized("invalid, revoked or expired API token")
    return principal


async def optional_principal(request: Request, settings: Settings) -> Principal | None:
    """The caller's principal when it sends a valid API token, else None (never an error);
    failed checks count against the address like any other's."""
    secret = bearer_secret(request.headers.get("authorization"))
    if secret is None:
        return None
    try:
        return await checked_principal(request, settings, secret)
    except ApiError:
        return None


def principal_dependency(
    admission: Admission | None = None,
) -> Callable[[Request, Settings], Awaitable[Principal]]:
    """A dependency that authenticates the caller, then applies ``admission`` if given."""

    async def dependency(request: Request, settings: SettingsDep) -> Principal:
        """Authenticate ``Authorization: Bearer <token>``; 401 ``UNAUTHORIZED`` otherwise,
        429 ``RATE_LIMITED`` for an address with too many failed checks."""
        header = request.headers.get("authorization")
        if not header:
            raise _unauthorized("missing Authorization header (expected: Bearer <API token>)")
        secret = bearer_secret(header)
        if secret is None:
            raise _unauthorized("malformed Authorization header (expected: Bearer <API token>)")
        principal = await checked_principal(request, settings, secret)
        request.state.principal = principal
        # Here, not in checked_principal: once per request that reaches a route.
        await recorder_for(request.app.state).record_use(
            principal.token_id,
            cache=getattr(request.app.state, "aredis", None),
            breaker=getattr(request.app.state, "redis_breaker", None),
        )
        if admission is not None:
            await admission.admit(
                principal.token_id,
                principal.environment_id,
                cache=getattr(request.app.state, "aredis", None),
                breaker=getattr(request.app.state, "redis_breaker", None),
            )
        return principal

    return dependency


require_principal = principal_dependency()


CurrentPrincipal = Annotated[Principal, Depends(require_principal)]
