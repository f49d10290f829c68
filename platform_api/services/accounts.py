"""Integrated accounts: lookup, credentials, status, update and permanent deletion.

The unified-API engine uses ``get_account``, ``get_credentials``, ``ensure_enabled`` and
``mark_needs_reauth``; the connect flow creates and reauthorizes accounts.
"""

from __future__ import annotations

from typing import Any, cast

import sqlalchemy as sa
from sqlmodel import Session, col, select

from core.errors import invalid_request, not_found
from core.settings import Settings
from platform_api.crypto import decrypt_json, encrypt_json
from platform_api.ids import new_id
from platform_api.integrations.catalog import get_manifest
from platform_api.integrations.provider_access import (
    UnsafeUpstreamError,
    check_upstream_url,
    check_values,
)
from platform_api.pagination import PageParams, paginate
from platform_api.services.cascade import delete_with_dependents
from platform_api.services.events import record_event
from platform_api.services.installed_integrations import (
    integration_disabled,
    integration_summary,
)
from platform_api.services.merge_patch import merge_patch
from platform_api.services.provider_connection_cache import invalidate_on_commit
from platform_api.tables.common import isoformat, utcnow
from platform_api.tables.installed_integration import InstalledIntegration
from platform_api.tables.integrated_account import IntegratedAccount, IntegratedAccountUpdate


def serialize_account(account: IntegratedAccount) -> dict[str, Any]:
    """The account record as the API (and every event about it) shows it; no credentials."""
    return {
        "id": account.id,
        "tenant_id": account.tenant_id,
        "integration": integration_summary(account.integration_name),
        "status": account.status,
        "context": account.context or {},
        "override": account.override or {},
        "created_at": isoformat(account.created_at),
        "updated_at": isoformat(account.updated_at),
    }


def _record(
    session: Session, account: IntegratedAccount, event_type: str, *, settings: Settings
) -> None:
    record_event(
        session,
        environment_id=account.environment_id,
        event_type=event_type,
        payload=serialize_account(account),
        settings=settings,
    )


def get_account(
    session: Session, *, environment_id: str, integrated_account_id: str
) -> IntegratedAccount:
    """The account; 404 when missing or in another environment."""
    account = session.get(IntegratedAccount, integrated_account_id)
    if account is None or account.environment_id != environment_id:
        raise not_found(f"integrated account {integrated_account_id}")
    return account


def get_credentials(account: IntegratedAccount, settings: Settings) -> dict[str, Any]:
    """The decrypted credentials (never to be returned or logged)."""
    credentials: dict[str, Any] = decrypt_json(account.credentials_encrypted, settings)
    return credentials


def ensure_enabled(session: Session, account: IntegratedAccount) -> InstalledIntegration:
    """The account's installed integration; 403 ``INTEGRATION_DISABLED`` when it is disabled."""
    installed = session.get(InstalledIntegration, account.installed_integration_id)
    if installed is None or not installed.is_enabled:
        raise integration_disabled(account.integration_name)
    return installed


def create_account(
    session: Session,
    *,
    installed: InstalledIntegration,
    tenant_id: str,
    credentials: dict[str, Any],
    settings: Settings,
) -> IntegratedAccount:
    """A new active account; records ``integrated_account:created``."""
    account = IntegratedAccount(
        id=new_id("acct"),
        environment_id=installed.environment_id,
        installed_integration_id=installed.id,
        integration_name=installed.integration_name,
        tenant_id=tenant_id,
        status="active",
        credentials_encrypted=encrypt_json(credentials, settings),
    )
    session.add(account)
    _record(session, account, "integrated_account:created", settings=settings)
    return account


def reauthorize(
    session: Session,
    *,
    account: IntegratedAccount,
    credentials: dict[str, Any],
    settings: Settings,
) -> IntegratedAccount:
    """Replace the credentials and make the account active; records ``:updated``."""
    account.credentials_encrypted = encrypt_json(credentials, settings)
    account.status = "active"
    account.updated_at = utcnow()
    session.add(account)
    _record(session, account, "integrated_account:updated", settings=settings)
    invalidate_on_commit(session, integrated_account_id=account.id)
    return account


def store_refreshed_credentials(
    session: Session,
    *,
    account: IntegratedAccount,
    credentials: dict[str, Any],
    settings: Settings,
) -> None:
    """New OAuth tokens for the account (a refresh: no event, the account is unchanged)."""
    account.credentials_encrypted = encrypt_json(credentials, settings)
    account.updated_at = utcnow()
    session.add(account)
    invalidate_on_commit(session, integrated_account_id=account.id)


def mark_needs_reauth(
    session: Session, account: IntegratedAccount, *, settings: Settings
) -> IntegratedAccount:
    """The upstream refused the credentials: flag the account and tell webhooks."""
    account.status = "needs_reauth"
    account.updated_at = utcnow()
    session.add(account)
    _record(session, account, "integrated_account:authentication_error", settings=settings)
    invalidate_on_commit(session, integrated_account_id=account.id)
    return account


def list_accounts(
    session: Session,
    *,
    environment_id: str,
    integration_name: str | None,
    tenant_id: str | None,
    params: PageParams,
    status: str | None = None,
) -> dict[str, Any]:
    """One page of the environment's accounts; ``status`` filters (the console uses it)."""
    statement = select(IntegratedAccount).where(IntegratedAccount.environment_id == environment_id)
    if integration_name is not None:
        statement = statement.where(IntegratedAccount.integration_name == integration_name)
    if tenant_id is not None:
        statement = statement.where(IntegratedAccount.tenant_id == tenant_id)
    scope = f"integrated-account:{environment_id}:name={integration_name}:tenant={tenant_id}"
    if status is not None:
        statement = statement.where(IntegratedAccount.status == status)
        scope += f":status={status}"  # appended only when set: API cursors stay valid
    return paginate(
        session,
        statement,
        id_column=col(IntegratedAccount.id),
        params=params,
        scope=scope,
        serialize=serialize_account,
    )


def update_account(
    session: Session,
    *,
    account: IntegratedAccount,
    update: IntegratedAccountUpdate,
    settings: Settings,
) -> IntegratedAccount:
    """Merge ``context`` and ``override`` (a ``null`` value removes a key); records ``:updated``.

    400 when ``override.base_url`` is not one of the integration's hosts (or an allow-listed
    development host), or a context value that fills the base URL breaks its pattern."""
    manifest = get_manifest(account.integration_name)
    if update.override is not None:
        base_url = update.override.get("base_url")
        if base_url is not None:
            if not isinstance(base_url, str) or manifest is None:
                raise invalid_request("override.base_url: must be an http(s) URL")
            try:
                check_upstream_url(
                    manifest, base_url, allowed_hosts=settings.resolved_outbound_allowed_hosts
                )
            except UnsafeUpstreamError as exc:
                raise invalid_request(f"override.{exc}") from exc
        account.override = merge_patch(account.override, update.override)
    if update.context is not None:
        if manifest is not None:
            try:
                check_values(manifest, update.context)
            except UnsafeUpstreamError as exc:
                raise invalid_request(f"context.{exc}") from exc
        account.context = merge_patch(account.context, update.context)
    account.updated_at = utcnow()
    session.add(account)
    _record(session, account, "integrated_account:updated", settings=settings)
    invalidate_on_commit(session, integrated_account_id=account.id)
    return account


def delete_account(session: Session, *, account: IntegratedAccount, settings: Settings) -> None:
    """Delete the account and every row referring to it (logs, cached records, runs ...)
    in the caller's transaction; records ``integrated_account:deleted``."""
    _record(session, account, "integrated_account:deleted", settings=settings)
    invalidate_on_commit(session, integrated_account_id=account.id)
    session.flush()
    table = cast(sa.Table, sa.inspect(IntegratedAccount).local_table)
    delete_with_dependents(session, table=table, where=table.c.id == account.id)
    session.expunge(account)
