"""OAuth accounts keep working: access tokens are refreshed shortly before they expire and
once after a provider 401.

One refresh at a time per account, across processes (a Redis lock): a provider that rotates
refresh tokens takes each one once, so a second refresher would spend a token that is already
gone and lock the account out. Whoever waited on the lock finds the new token and uses it. A
refresh the provider refuses flags the account ``needs_reauth`` and records
``integrated_account:authentication_error``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import anyio.to_thread
import redis.asyncio as aioredis
import structlog

from core.errors import ApiError
from core.settings import Settings
from platform_api.db import session_scope
from platform_api.integrations.catalog import IntegrationManifest
from platform_api.integrations.connection import render
from platform_api.redis_conn import get_redis_url
from platform_api.services import accounts
from platform_api.services.installed_integrations import find_installed, get_override
from platform_api.tables.common import as_utc, utcnow
from platform_api.unified.call import Connection

log = structlog.get_logger(__name__)

REFRESH_MARGIN = timedelta(seconds=60)
LOCK_KEY = "switchyard:oauth-refresh:{}"
T = TypeVar("T")


def token_state(manifest: IntegrationManifest, credentials: dict[str, Any]) -> dict[str, Any]:
    """What a connection keeps about its OAuth token (nothing for other auth schemes)."""
    if manifest.auth.oauth2 is None or not credentials.get("access_token"):
        return {}
    expires_at = None
    if raw := credentials.get("expires_at"):
        expires_at = as_utc(datetime.fromisoformat(str(raw).replace("Z", "+00:00")))
    return {
        "access_token": str(credentials["access_token"]),
        "expires_at": expires_at,
        "refreshable": bool(credentials.get("refresh_token")),
    }


def expires_soon(connection: Connection) -> bool:
    return bool(
        connection.refreshable
        and connection.expires_at is not None
        and connection.expires_at - utcnow() < REFRESH_MARGIN
    )


async def retrying_once(
    settings: Settings, connection: Connection, call: Callable[[Connection], Awaitable[T]]
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


async def refresh(settings: Settings, stale: Connection) -> Connection:
    """A connection with a fresh access token (refreshed here, or by whoever held the lock)."""
    environment_id, account_id = stale.environment_id, stale.integrated_account_id
    client = aioredis.Redis.from_url(get_redis_url(settings))
    try:
        async with client.lock(LOCK_KEY.format(account_id), timeout=30, blocking_timeout=20):
            credentials, override = await anyio.to_thread.run_sync(
                _load, settings, environment_id, account_id
            )
            if credentials.get("access_token") == stale.access_token:
                await _refresh_tokens(settings, stale, credentials, override)
            else:
                log.info("oauth_refreshed_meanwhile", account_id=account_id)
    finally:
        await client.aclose()
    return await anyio.to_thread.run_sync(_reopen, settings, environment_id, account_id)


async def _refresh_tokens(
    settings: Settings,
    stale: Connection,
    credentials: dict[str, Any],
    override: dict[str, Any],
) -> None:
    # Imported here: oauth_connect imports the connect service, which the engine's callers use.
    from platform_api.services.oauth_connect import client_for, request_tokens

    environment_id, account_id = stale.environment_id, stale.integrated_account_id
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
        await anyio.to_thread.run_sync(_refused, settings, environment_id, account_id)
        raise ApiError(
            401, "INTEGRATION_UNAUTHORIZED",
            f"{manifest.label} refused to renew this account's access; reconnect the account",
        ) from exc  # fmt: skip
    # A provider that does not rotate sends no new refresh token: keep the old one.
    merged = {**credentials, **tokens}
    await anyio.to_thread.run_sync(_store, settings, environment_id, account_id, merged)
    log.info("oauth_token_refreshed", account_id=account_id)


def _load(
    settings: Settings, environment_id: str, account_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    with session_scope(settings) as session:
        account = accounts.get_account(
            session, environment_id=environment_id, account_id=account_id
        )
        installed = find_installed(
            session, environment_id=environment_id, integration_name=account.integration_name
        )
        override = get_override(installed, settings) if installed is not None else {}
        return accounts.get_credentials(account, settings), override


def _store(
    settings: Settings, environment_id: str, account_id: str, credentials: dict[str, Any]
) -> None:
    with session_scope(settings) as session:
        account = accounts.get_account(
            session, environment_id=environment_id, account_id=account_id
        )
        accounts.store_refreshed_credentials(session, account=account, credentials=credentials)


def _refused(settings: Settings, environment_id: str, account_id: str) -> None:
    with session_scope(settings) as session:
        account = accounts.get_account(
            session, environment_id=environment_id, account_id=account_id
        )
        if account.status != "needs_reauth":
            accounts.mark_needs_reauth(session, account)


def _reopen(settings: Settings, environment_id: str, account_id: str) -> Connection:
    from platform_api.services.unified import open_connection

    with session_scope(settings) as session:
        return open_connection(
            session, settings, environment_id=environment_id, integrated_account_id=account_id
        )
