"""Unified and proxy calls of an integrated account: lookup, the engine, the API log."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import structlog

from core.errors import ApiError
from core.request_context import get_request_id
from core.settings import Settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.services import accounts, oauth_refresh, provider_connection_cache
from platform_api.services.api_log_writer import ApiLogRow, insert_rows, writer_for
from platform_api.services.provider_connection import open_connection
from platform_api.tables.common import utcnow
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.unified import engine, proxy
from platform_api.unified.call import ProviderConnection, UnifiedCall
from platform_api.unified.requests import ProxyRequest, UnifiedRequest

log = structlog.get_logger(__name__)
T = TypeVar("T")


def _load_connection(
    settings: Settings, environment_id: str, integrated_account_id: str
) -> ProviderConnection:
    with session_scope(settings) as session:
        return open_connection(
            session, settings, environment_id=environment_id,
            integrated_account_id=integrated_account_id,
        )  # fmt: skip


async def connection_for(
    settings: Settings, *, environment_id: str, integrated_account_id: str
) -> ProviderConnection:
    """``open_connection`` through the per-process cache; a miss queries off the event loop."""
    cached, generation = provider_connection_cache.lookup(environment_id, integrated_account_id)
    if cached is not None:
        return cached
    connection = await anyio.to_thread.run_sync(
        _load_connection, settings, environment_id, integrated_account_id
    )
    provider_connection_cache.store(
        environment_id,
        integrated_account_id,
        connection,
        generation=generation,
        ttl_s=settings.unified_connection_cache_s,
    )
    return connection


async def fresh_connection(
    settings: Settings, *, environment_id: str, integrated_account_id: str
) -> ProviderConnection:
    """``connection_for``, with an OAuth access token that expires soon refreshed first."""
    connection = await connection_for(
        settings, environment_id=environment_id, integrated_account_id=integrated_account_id
    )
    if oauth_refresh.expires_soon(connection):
        connection = await oauth_refresh.refresh(settings, connection)
    return connection


async def run_logged(
    settings: Settings,
    request: UnifiedRequest | ProxyRequest,
    connection: ProviderConnection,
    attempt: Callable[[ProviderConnection, list[int]], Awaitable[T]],
    *,
    kind: str,
) -> T:
    """``attempt`` (retried once with a refreshed token after a provider 401 on an OAuth
    account), and its API-log row written whatever happens; refused credentials flag the
    account.

    ``attempt`` receives a list it appends provider statuses to. The row is written in its own
    transaction: a failed call must still be logged.
    """
    statuses: list[int] = []
    started = time.perf_counter()
    status, error = 200, None
    method = request.http_method
    try:
        result = await oauth_refresh.retrying_once(
            settings, connection, lambda fresh: attempt(fresh, statuses)
        )
        status = 204 if result is None and method == "DELETE" else 201 if method == "POST" else 200
        return result
    except ApiError as exc:
        status, error = exc.status_code, exc.code
        raise
    except Exception:
        status, error = 500, "INTERNAL_ERROR"
        raise
    finally:
        row = {
            "id": new_id("log"),
            "environment_id": request.environment_id,
            "integrated_account_id": request.integrated_account_id,
            "kind": kind,
            "method": method,
            "path": request.path[:500],
            "status": status,
            "upstream_status": statuses[-1] if statuses else None,
            "error": error,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "request_id": get_request_id(),
            "created_at": utcnow(),
        }
        refused = error == "INTEGRATION_UNAUTHORIZED"
        # Off the request path (batched by the writer), except a refusal, which also flags
        # the account, and a full queue, where the call writes its own row.
        if refused or not writer_for(settings).add(row):
            await anyio.to_thread.run_sync(_write_log, settings, row, refused)


def _write_log(settings: Settings, row: ApiLogRow, refused: bool) -> None:
    with session_scope(settings) as log_session:
        insert_rows(log_session, [row])
        if refused:
            account = log_session.get(IntegratedAccount, row["integrated_account_id"])
            if account is not None and account.status != "needs_reauth":
                accounts.mark_needs_reauth(log_session, account, settings=settings)


async def unified_request(settings: Settings, request: UnifiedRequest) -> Any:
    """One unified call through the engine, logged on the account."""
    connection = await fresh_connection(
        settings,
        environment_id=request.environment_id,
        integrated_account_id=request.integrated_account_id,
    )

    async def attempt(connection: ProviderConnection, statuses: list[int]) -> Any:
        return await engine.run(
            UnifiedCall.start(settings, connection, request, upstream_statuses=statuses)
        )

    return await run_logged(settings, request, connection, attempt, kind="unified")


async def proxy_request(settings: Settings, request: ProxyRequest) -> proxy.ProxyResult:
    """One pass-through call to the provider, logged on the account."""
    connection = await fresh_connection(
        settings,
        environment_id=request.environment_id,
        integrated_account_id=request.integrated_account_id,
    )

    async def attempt(connection: ProviderConnection, statuses: list[int]) -> proxy.ProxyResult:
        return await proxy.forward(settings, connection, request, statuses=statuses)

    return await run_logged(settings, request, connection, attempt, kind="proxy")
