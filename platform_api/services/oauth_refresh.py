"""OAuth accounts keep working: access tokens are refreshed shortly before they expire and
once after a provider 401.

One refresh at a time per account, across processes (a Redis lock): a provider that rotates
refresh tokens takes each one once, so a second refresher would spend a token that is already
gone and lock the account out. The lock outlives the longest token request the settings allow
(``refresh_lock_s``), so it cannot lapse while one is under way. Whoever waited on the lock
finds the new token and uses it. A refresh the provider refuses flags the account
``needs_reauth`` and records ``integrated_account:authentication_error`` — unless the stored
tokens changed meanwhile: then another refresher won, and its token is used.

Only ``INTEGRATION_UNAUTHORIZED`` (a provider 401, or a status the integration maps to 401)
refreshes: a 403 says the token may not do this, not that it expired, so it is left alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

import anyio.to_thread
import redis.asyncio as aioredis
import structlog
from redis.asyncio.lock import Lock
from redis.exceptions import LockError

from core.errors import ApiError
from core.redis_url import get_redis_url
from core.settings import Settings
from platform_api.db import session_scope
from platform_api.integrations.provider_access import render
from platform_api.services import accounts
from platform_api.services.installed_integrations import find_installed, get_override
from platform_api.services.oauth_client import client_for, request_tokens, token_request_deadline_s
from platform_api.services.provider_connection import open_connection
from platform_api.tables.common import utcnow
from platform_api.unified.call import ProviderConnection

log = structlog.get_logger(__name__)

REFRESH_MARGIN = timedelta(seconds=60)
LOCK_KEY = "switchyard:oauth-refresh:{}"
# Held beyond the token request for the database work around it (read, then store the tokens).
LOCK_MARGIN_S = 30.0
T = TypeVar("T")


def refresh_lock_s(settings: Settings) -> float:
    """How long a refresher holds the account's lock at most (and a waiter waits for it)."""
    return token_request_deadline_s(settings) + LOCK_MARGIN_S


def expires_soon(connection: ProviderConnection) -> bool:
    return bool(
        connection.refreshable
        and connection.expires_at is not None
        and connection.expires_at - utcnow() < REFRESH_MARGIN
    )


async def retrying_once(
    settings: Settings,
    connection: ProviderConnection,
    call: Callable[[ProviderConnection], Awaitable[T]],
) -> T:
    """``call(connection)``; after a provider 401 on a refreshable account, refresh the token
    and call once more."""
    try:
        return await call(connection)
    except ApiError as exc:
        if exc.code != "INTEGRATION_UNAUTHORIZED" or not connection.refreshable:
            raise
    fresh = await refresh(settings, connection)
    return await call(fresh)


async def refresh(settings: Settings, stale: ProviderConnection) -> ProviderConnection:
    """A connection with a fresh access token (refreshed here, or by whoever held the lock)."""
    environment_id, integrated_account_id = stale.environment_id, stale.integrated_account_id
    client = aioredis.Redis.from_url(get_redis_url(settings))
    held = refresh_lock_s(settings)
    lock = client.lock(LOCK_KEY.format(integrated_account_id), timeout=held, blocking_timeout=held)
    try:
        if not await lock.acquire():
            await _use_stored_or_retry_later(settings, stale)
        else:
            try:
                await _refresh_unless_done(settings, stale)
            finally:
                await _release(lock, integrated_account_id)
    finally:
        await client.aclose()
    return await anyio.to_thread.run_sync(_reopen, settings, environment_id, integrated_account_id)


async def _refresh_unless_done(settings: Settings, stale: ProviderConnection) -> None:
    """(Under the lock.) Refresh, unless the stored token is no longer the stale one."""
    credentials, override = await anyio.to_thread.run_sync(
        _load, settings, stale.environment_id, stale.integrated_account_id
    )
    if credentials.get("access_token") == stale.access_token:
        await _refresh_tokens(settings, stale, credentials, override)
    else:
        log.info("oauth_refreshed_meanwhile", account_id=stale.integrated_account_id)


async def _use_stored_or_retry_later(settings: Settings, stale: ProviderConnection) -> None:
    """The lock stayed taken as long as a refresh may last: use a token stored meanwhile, or
    answer 503 (nothing was spent, a later call refreshes)."""
    credentials, _ = await anyio.to_thread.run_sync(
        _load, settings, stale.environment_id, stale.integrated_account_id
    )
    if credentials.get("access_token") != stale.access_token:
        return
    raise ApiError(
        503, "PROVIDER_UNAVAILABLE",
        f"{stale.integration.label} is still renewing this account's access; try again shortly",
        headers={"Retry-After": "5"},
    )  # fmt: skip


async def _release(lock: Lock, integrated_account_id: str) -> None:
    try:
        await lock.release()
    except LockError:
        # Expired first (a database call outlasted the margin): the refresh is done anyway.
        log.warning("oauth_refresh_lock_lapsed", account_id=integrated_account_id)


async def _refresh_tokens(
    settings: Settings,
    stale: ProviderConnection,
    credentials: dict[str, Any],
    override: dict[str, Any],
) -> None:
    environment_id, integrated_account_id = stale.environment_id, stale.integrated_account_id
    manifest = stale.integration
    spec, client_id, secret, _ = client_for(manifest, override)
    form = {"grant_type": "refresh_token", "refresh_token": str(credentials["refresh_token"]),
            "client_id": client_id, **({"client_secret": secret} if secret else {})}  # fmt: skip
    try:
        tokens = await request_tokens(
            settings, manifest, render(spec.token_url, {}, settings), form
        )
    except ApiError as exc:
        if exc.code != "OAUTH_EXCHANGE_FAILED":
            raise  # the provider could not be asked (503): try again later, nothing is lost
        if await _stored_tokens_changed(settings, stale, credentials):
            # Another refresher spent the refresh token first and stored its answer: that
            # refusal is the race lost, not the account's access withdrawn.
            log.info("oauth_refresh_lost_race", account_id=integrated_account_id)
            return
        await anyio.to_thread.run_sync(_refused, settings, environment_id, integrated_account_id)
        raise ApiError(
            401, "INTEGRATION_UNAUTHORIZED",
            f"{manifest.label} refused to renew this account's access; reconnect the account",
        ) from exc  # fmt: skip
    # A provider that does not rotate sends no new refresh token: keep the old one.
    merged = {**credentials, **tokens}
    await anyio.to_thread.run_sync(_store, settings, environment_id, integrated_account_id, merged)
    log.info("oauth_token_refreshed", account_id=integrated_account_id)


async def _stored_tokens_changed(
    settings: Settings, stale: ProviderConnection, sent: dict[str, Any]
) -> bool:
    """Whether the account's stored tokens differ from the ``sent`` ones (read again)."""
    stored, _ = await anyio.to_thread.run_sync(
        _load, settings, stale.environment_id, stale.integrated_account_id
    )
    return any(stored.get(name) != sent.get(name) for name in ("access_token", "refresh_token"))


def _load(
    settings: Settings, environment_id: str, integrated_account_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    with session_scope(settings) as session:
        account = accounts.get_account(
            session, environment_id=environment_id, integrated_account_id=integrated_account_id
        )
        installed = find_installed(
            session, environment_id=environment_id, integration_name=account.integration_name
        )
        override = get_override(installed, settings) if installed is not None else {}
        return accounts.get_credentials(account, settings), override


def _store(
    settings: Settings, environment_id: str, integrated_account_id: str, credentials: dict[str, Any]
) -> None:
    with session_scope(settings) as session:
        account = accounts.get_account(
            session, environment_id=environment_id, integrated_account_id=integrated_account_id
        )
        accounts.store_refreshed_credentials(
            session, account=account, credentials=credentials, settings=settings
        )


def _refused(settings: Settings, environment_id: str, integrated_account_id: str) -> None:
    with session_scope(settings) as session:
        account = accounts.get_account(
            session, environment_id=environment_id, integrated_account_id=integrated_account_id
        )
        if account.status != "needs_reauth":
            accounts.mark_needs_reauth(session, account, settings=settings)


def _reopen(
    settings: Settings, environment_id: str, integrated_account_id: str
) -> ProviderConnection:
    with session_scope(settings) as session:
        return open_connection(
            session,
            settings,
            environment_id=environment_id,
            integrated_account_id=integrated_account_id,
        )
