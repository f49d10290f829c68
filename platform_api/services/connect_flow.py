"""The connect flow: what a link token may connect, and connecting the account with it.

Used by the JSON endpoints under ``/connect-account/session`` that the connect page calls;
authorized by the link token alone. The OAuth leg (authorize, callback, token exchange) is
``connect_flow_oauth``; both end in ``complete_session``.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

import anyio.from_thread
from sqlmodel import Session, select

from core.errors import ApiError, invalid_request
from core.settings import Settings
from platform_api.integrations.catalog import IntegrationManifest, get_manifest
from platform_api.integrations.provider_access import (
    MissingValueError,
    UnsafeUpstreamError,
    UnsendableCredentialError,
    auth_parts,
    check_sendable,
    check_upstream_url,
    check_values,
    resolve_base_url,
)
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
from platform_api.unified.call import ProviderConnection, send_to_provider
from platform_api.unified.resource_map import ResourceMap, get_resources

# Keys an OAuth token response leaves in the credentials, besides the integration file's fields.
OAUTH_CREDENTIAL_KEYS = ("access_token", "refresh_token", "expires_at", "token_type", "scope")


def _pattern(manifest: IntegrationManifest, name: str) -> str | None:
    """What a field's value must match: its own pattern, or the base URL's for the value."""
    field = next(f for f in manifest.auth.fields if f.name == name)
    return field.pattern or manifest.base_url_patterns.get(name)


def _offer(
    manifest: IntegrationManifest, installed: InstalledIntegration, *, settings: Settings
) -> dict[str, Any]:
    auth = manifest.auth
    oauth = None
    if auth.oauth2 is not None:
        override = get_override(installed, settings).get("oauth") or {}
        oauth = {
            "authorize_url": auth.oauth2.authorize_url,
            "scopes": override.get("scopes") or auth.oauth2.default_scopes,
            "client_id": override.get("client_id"),
        }
    return {
        **manifest.summary,
        "auth": {
            "scheme": auth.scheme,
            "fields": [
                {**f.model_dump(), "pattern": _pattern(manifest, f.name)} for f in auth.fields
            ],  # fmt: skip
            "oauth2": oauth,
        },
    }


def _offered(
    session: Session, link_token: LinkToken, *, settings: Settings
) -> list[dict[str, Any]]:
    statement = select(InstalledIntegration).where(
        InstalledIntegration.environment_id == link_token.environment_id,
        InstalledIntegration.is_enabled == True,  # noqa: E712 (SQL expression)
    )
    if link_token.integration_name is not None:
        # A token made for one integration (or a reauthorization) connects that one only.
        statement = statement.where(
            InstalledIntegration.integration_name == link_token.integration_name
        )
    offers = []
    for installed in session.exec(statement.order_by(InstalledIntegration.integration_name)):
        manifest = get_manifest(installed.integration_name)
        if manifest is not None:
            offers.append(_offer(manifest, installed, settings=settings))
    return offers


def describe_session(session: Session, *, secret: str, settings: Settings) -> dict[str, Any]:
    """What the connect page shows for this link token."""
    link_token = resolve_link_token(session, secret=secret)
    return {
        "tenant_id": link_token.tenant_id,
        "mode": "reauthorize" if link_token.integrated_account_id else "connect",
        "integrated_account_id": link_token.integrated_account_id,
        "preselected_integration": link_token.integration_name,
        "expires_at": isoformat(link_token.expires_at),
        "integrations": _offered(session, link_token, settings=settings),
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
        check_sendable(credentials)
    except UnsendableCredentialError as exc:
        raise invalid_request(
            f"credentials.{exc}: control characters (line breaks, NUL) are not allowed"
        ) from exc
    for field in manifest.auth.fields:
        value = credentials.get(field.name)
        if value and field.pattern and not re.fullmatch(field.pattern, str(value)):
            raise invalid_request(
                f"credentials.{field.name}: {field.label} must match {field.pattern}"
            )
    try:
        check_values(manifest, credentials)
    except UnsafeUpstreamError as exc:
        raise invalid_request(f"credentials.{exc}") from exc
    return dict(credentials)


async def verify_credentials(
    settings: Settings,
    manifest: IntegrationManifest,
    credentials: dict[str, str],
    *,
    context: dict[str, Any],
    override: dict[str, Any],
) -> None:
    """Run the integration's credential check (if it declares one) through the engine's
    provider call: 400 ``INVALID_CREDENTIALS`` when the provider refuses them, 503 when it
    cannot be asked."""
    check = manifest.auth.check
    if check is None:
        return
    try:
        base_url = resolve_base_url(
            manifest, credentials=credentials, context=context, override=override,
            settings=settings,
        )  # fmt: skip
        check_upstream_url(
            manifest, base_url, allowed_hosts=settings.resolved_outbound_allowed_hosts
        )
        auth = auth_parts(manifest, credentials)
    except (MissingValueError, UnsafeUpstreamError) as exc:
        raise invalid_request(f"credentials: {exc}") from exc
    # Not an account yet: the connection the account would have.
    connection = ProviderConnection(
        environment_id="", integrated_account_id="", integration=manifest, base_url=base_url,
        auth=auth, resources=get_resources(manifest.name) or ResourceMap(resources={}),
    )  # fmt: skip
    try:
        await send_to_provider(
            settings, connection, method=check.method, path=check.path,
            params=dict(check.query), error_mappings=[connection.resources.errors],
        )  # fmt: skip
    except ApiError as exc:
        if exc.status_code < 500 and exc.status_code != 429:
            raise ApiError(
                400, "INVALID_CREDENTIALS",
                f"{manifest.label} did not accept these credentials; check them and try again",
            ) from exc  # fmt: skip
        raise ApiError(
            503, "PROVIDER_UNAVAILABLE",
            f"{manifest.label} could not be reached to check the credentials; try again shortly",
            headers={"Retry-After": "5"},
        ) from exc  # fmt: skip


def complete_session(
    session: Session,
    *,
    request: ConnectSessionCreate,
    settings: Settings,
    via_oauth: bool = False,
) -> tuple[dict[str, Any], bool]:
    """Create the account (or reauthorize it) and spend the link token in one transaction.

    Returns ``({integrated_account_id, integration, tenant_id}, created)``.
    """
    link_token = resolve_link_token(session, secret=request.link_token)
    environment_id = link_token.environment_id
    name = request.integration_name
    if link_token.integration_name is not None and name != link_token.integration_name:
        doing = "reauthorizes" if link_token.integrated_account_id else "connects only"
        raise invalid_request(
            f"integration_name: this link token {doing} {link_token.integration_name}"
        )
    installed = require_enabled_installation(session, environment_id=environment_id, name=name)
    manifest = get_manifest(name)
    assert manifest is not None  # require_enabled_installation checked the catalog
    credentials = check_credentials(manifest, request.credentials, via_oauth=via_oauth)
    existing = None
    if link_token.integrated_account_id is not None:
        existing = accounts.get_account(
            session,
            environment_id=environment_id,
            integrated_account_id=link_token.integrated_account_id,
        )
    if not via_oauth:
        # Called from a sync route (a worker thread of the event loop's): the check is async.
        anyio.from_thread.run(
            partial(
                verify_credentials, settings, manifest, credentials,
                context=dict(existing.context or {}) if existing else {},
                override=dict(existing.override or {}) if existing else {},
            )
        )  # fmt: skip
    # Spent last, after every check, so a rejected attempt leaves the token usable.
    consume_link_token(session, link_token=link_token)
    if existing is not None:
        account = existing
        accounts.reauthorize(session, account=account, credentials=credentials, settings=settings)
        created = False
    else:
        account = accounts.create_account(
            session,
            installed=installed,
            tenant_id=link_token.tenant_id,
            credentials=credentials,
            settings=settings,
        )
        created = True
    result = {
        "integrated_account_id": account.id,
        "integration": manifest.summary,
        "tenant_id": account.tenant_id,
    }
    return result, created
