"""Link tokens: issued by the API, redeemed once by the connect page within their lifetime."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select

from core.errors import ApiError, invalid_request
from core.settings import Settings
from platform_api.ids import new_id
from platform_api.integrations.catalog import get_manifest
from platform_api.services.accounts import ensure_enabled, get_account
from platform_api.services.installed_integrations import find_installed, integration_disabled
from platform_api.tables.common import as_utc, isoformat, utcnow
from platform_api.tables.installed_integration import InstalledIntegration
from platform_api.tables.link_token import LinkToken, LinkTokenCreate

LINK_TOKEN_PREFIX = "lt_"


def link_token_invalid(why: str = "is not valid") -> ApiError:
    # One code for every case; the message says which, in words the connect page shows.
    return ApiError(401, "LINK_TOKEN_INVALID", f"this link {why}; ask for a new one")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def require_enabled_installation(
    session: Session, *, environment_id: str, name: str
) -> InstalledIntegration:
    """The installed integration ``name``; 400 when not installed, 403 when disabled."""
    installed = find_installed(session, environment_id=environment_id, integration_name=name)
    if installed is None or get_manifest(name) is None:
        raise invalid_request(f"integration_name: {name} is not installed in this environment")
    if not installed.is_enabled:
        raise integration_disabled(name)
    return installed


def create_link_token(
    session: Session, *, environment_id: str, request: LinkTokenCreate, settings: Settings
) -> dict[str, Any]:
    """A new link token: ``{link_token, expires_at, link_url}`` (the token is shown once)."""
    if (request.tenant_id is None) == (request.integrated_account_id is None):
        raise invalid_request("exactly one of tenant_id or integrated_account_id is required")
    integration_name = request.integration_name
    tenant_id = request.tenant_id
    if request.integrated_account_id is not None:
        account = get_account(
            session,
            environment_id=environment_id,
            integrated_account_id=request.integrated_account_id,
        )
        ensure_enabled(session, account)
        if integration_name not in (None, account.integration_name):
            raise invalid_request(
                f"integration_name: the account belongs to {account.integration_name}"
            )
        integration_name, tenant_id = account.integration_name, account.tenant_id
    elif integration_name is not None:
        require_enabled_installation(session, environment_id=environment_id, name=integration_name)
    secret = LINK_TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = LinkToken(
        id=new_id("lnk"),
        environment_id=environment_id,
        token_hash=_hash(secret),
        tenant_id=tenant_id or "",
        integration_name=integration_name,
        integrated_account_id=request.integrated_account_id,
        expires_at=utcnow() + timedelta(seconds=settings.link_token_ttl_seconds),
    )
    session.add(row)
    return {
        "link_token": secret,
        "expires_at": isoformat(row.expires_at),
        "link_url": f"{settings.base_url}/connect-account?link_token={secret}",
    }


def resolve_link_token(session: Session, *, secret: str) -> LinkToken:
    """The unused, unexpired token for ``secret``; 401 ``LINK_TOKEN_INVALID`` otherwise."""
    row = session.exec(select(LinkToken).where(LinkToken.token_hash == _hash(secret))).first()
    if row is None:
        raise link_token_invalid()
    if row.used_at is not None:
        raise link_token_invalid("was already used")
    expires_at = as_utc(row.expires_at)
    if expires_at is None or expires_at <= utcnow():
        raise link_token_invalid("has expired")
    return row


def consume_link_token(session: Session, *, link_token: LinkToken) -> None:
    """Mark the token used, atomically: of two concurrent redemptions exactly one wins."""
    now = utcnow()
    result = session.execute(
        sa.update(LinkToken)
        .where(
            col(LinkToken.id) == link_token.id,
            col(LinkToken.used_at).is_(None),
            col(LinkToken.expires_at) > now,
        )
        .values(used_at=now)
        # The caller's session already holds the row; set_committed_value updates it below.
        .execution_options(synchronize_session=False)
    )
    if cast("CursorResult[Any]", result).rowcount != 1:
        raise link_token_invalid()
    # Reflect the change on the loaded object without scheduling a second UPDATE.
    set_committed_value(link_token, "used_at", now)
