"""An integrated account's provider connection: its integration file and resource map, its
base URL and auth parts from the decrypted provider credentials, and its OAuth token state.

Built here, below the two that need one: the unified and proxy calls (``services.unified``,
through the per-process ``provider_connection_cache``) and the OAuth refresh
(``oauth_refresh``), which opens it again once the new token is stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Session

from core.errors import ApiError, invalid_request, not_found
from core.settings import Settings
from platform_api.integrations.catalog import IntegrationManifest, get_manifest
from platform_api.integrations.provider_access import (
    MissingValueError,
    UnsafeUpstreamError,
    UnsendableCredentialError,
    auth_parts,
    check_upstream_url,
    resolve_base_url,
)
from platform_api.services import accounts
from platform_api.tables.common import as_utc
from platform_api.unified.call import ProviderConnection
from platform_api.unified.resource_map import get_resources


def token_state(manifest: IntegrationManifest, credentials: dict[str, Any]) -> dict[str, Any]:
    """What a provider connection keeps about its OAuth token (nothing for other auth schemes)."""
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


def open_connection(
    session: Session, settings: Settings, *, environment_id: str, integrated_account_id: str
) -> ProviderConnection:
    """The account's provider connection; 404 unknown account, 403 disabled integration."""
    account = accounts.get_account(
        session, environment_id=environment_id, integrated_account_id=integrated_account_id
    )
    accounts.ensure_enabled(session, account)
    integration = get_manifest(account.integration_name)
    resources = get_resources(account.integration_name)
    if integration is None or resources is None:
        raise not_found(f"unified resources of integration {account.integration_name}")
    credentials = accounts.get_credentials(account, settings)
    try:
        base_url = resolve_base_url(
            integration,
            credentials=credentials,
            context=account.context,
            override=account.override,
            settings=settings,
        )
        check_upstream_url(
            integration, base_url, allowed_hosts=settings.resolved_outbound_allowed_hosts
        )
        auth = auth_parts(integration, credentials)
    except MissingValueError as exc:
        raise invalid_request(f"the account is missing a connection value: {exc}") from exc
    except UnsendableCredentialError as exc:
        raise invalid_request(
            f"the account's credentials.{exc} holds a control character no request can carry; "
            "reconnect the account with a link token"
        ) from exc
    except UnsafeUpstreamError as exc:
        message = f"the account's upstream is refused: {exc}"
        raise ApiError(502, "UPSTREAM_BLOCKED", message) from exc
    return ProviderConnection(
        environment_id=environment_id,
        integrated_account_id=account.id,
        integration=integration,
        resources=resources,
        base_url=base_url,
        auth=auth,
        context=dict(account.context or {}),
        **token_state(integration, credentials),
    )
