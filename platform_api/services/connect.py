"""The connect-account session: what a link token may connect, and connecting it.

Used by the JSON endpoints under ``/connect-account/session`` that the connect page calls;
authorized by the link token alone.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, select

from core.errors import invalid_request
from platform_api.db import settings_of_row
from platform_api.integrations.catalog import IntegrationManifest, get_manifest
from platform_api.integrations.connection import UnsafeUpstreamError, check_values
from platform_api.services import accounts
from platform_api.services.installed_integrations import get_override
from platform_api.services.link_tokens import (
    consume_link_token,
    require_enabled_installation,
    resolve_link_token,
)
from platform_api.tables.common import isoformat
from platform_api.tables.installed_integration import InstalledIntegration
from platform_api.tables.link_token import ConnectSessionCreate, LinkToken

# Keys an OAuth token response leaves in the credentials, besides the manifest's fields.
OAUTH_CREDENTIAL_KEYS = ("access_token", "refresh_token", "expires_at", "token_type", "scope")


def _offer(manifest: IntegrationManifest, installed: InstalledIntegration) -> dict[str, Any]:
    auth = manifest.auth
    oauth = None
    if auth.oauth2 is not None:
        override = get_override(installed, settings_of_row(installed)).get("oauth") or {}
        oauth = {
            "authorize_url": auth.oauth2.authorize_url,
            "scopes": override.get("scopes") or auth.oauth2.default_scopes,
            "client_id": override.get("client_id"),
        }
    return {
        **manifest.summary,
        "auth": {
            "scheme": auth.scheme,
            "fields": [f.model_dump() for f in auth.fields],
            "oauth2": oauth,
        },
    }


def _offered(session: Session, link_token: LinkToken) -> list[dict[str, Any]]:
    statement = select(InstalledIntegration).where(
        InstalledIntegration.environment_id == link_token.environment_id,
        InstalledIntegration.is_enabled == True,  # noqa: E712 (SQL expression)
    )
    if link_token.integrated_account_id is not None:
        # A reauthorization reconnects the same integration, nothing else.
        statement = statement.where(
            InstalledIntegration.integration_name == link_token.integration_name
        )
    offers = []
    for installed in session.exec(statement.order_by(InstalledIntegration.integration_name)):
        manifest = get_manifest(installed.integration_name)
        if manifest is not None:
            offers.append(_offer(manifest, installed))
    return offers


def describe_session(session: Session, *, secret: str) -> dict[str, Any]:
    """What the connect page shows for this link token."""
    link_token = resolve_link_token(session, secret=secret)
    return {
        "tenant_id": link_token.tenant_id,
        "mode": "reauthorize" if link_token.integrated_account_id else "connect",
        "integrated_account_id": link_token.integrated_account_id,
        "preselected_integration": link_token.integration_name,
        "expires_at": isoformat(link_token.expires_at),
        "integrations": _offered(session, link_token),
    }


def check_credentials(
    manifest: IntegrationManifest, credentials: dict[str, str], *, via_oauth: bool = False
) -> dict[str, str]:
    """The credentials to store; 400 naming missing or unknown fields."""
    declared = manifest.auth.field_names()
    allowed = set(declared) | (set(OAUTH_CREDENTIAL_KEYS) if manifest.auth.oauth2 else set())
    unknown = sorted(set(credentials) - allowed)
    if unknown:
        raise invalid_request(f"credentials: unknown fields: {', '.join(unknown)}")
    required = ["access_token"] if via_oauth else manifest.auth.field_names(required_only=True)
    missing = [name for name in required if not str(credentials.get(name) or "").strip()]
    if missing:
        raise invalid_request(f"credentials: missing required fields: {', '.join(missing)}")
    try:
        check_values(manifest, credentials)
    except UnsafeUpstreamError as exc:
        raise invalid_request(f"credentials.{exc}") from exc
    return dict(credentials)


def complete_session(
    session: Session, *, request: ConnectSessionCreate, via_oauth: bool = False
) -> tuple[dict[str, Any], bool]:
    """Create the account (or reauthorize it) and spend the link token in one transaction.

    Returns ``({integrated_account_id, integration, tenant_id}, created)``.
    """
    link_token = resolve_link_token(session, secret=request.link_token)
    environment_id = link_token.environment_id
    name = request.integration_name
    if link_token.integrated_account_id is not None and name != link_token.integration_name:
        raise invalid_request(
            f"integration_name: this link token reauthorizes {link_token.integration_name}"
        )
    installed = require_enabled_installation(session, environment_id=environment_id, name=name)
    manifest = get_manifest(name)
    assert manifest is not None  # require_enabled_installation checked the catalog
    credentials = check_credentials(manifest, request.credentials, via_oauth=via_oauth)
    # Spent last, after every check, so a rejected attempt leaves the token usable.
    consume_link_token(session, link_token=link_token)
    if link_token.integrated_account_id is not None:
        account = accounts.get_account(
            session, environment_id=environment_id, account_id=link_token.integrated_account_id
        )
        accounts.reauthorize(session, account=account, credentials=credentials)
        created = False
    else:
        account = accounts.create_account(
            session, installed=installed, tenant_id=link_token.tenant_id, credentials=credentials
        )
        created = True
    result = {
        "integrated_account_id": account.id,
        "integration": manifest.summary,
        "tenant_id": account.tenant_id,
    }
    return result, created
