"""The connect flow's OAuth 2.0 leg: authorization code with PKCE, from the connect page.

``start`` checks the link token and the integration, keeps a one-time ``state`` in Redis (the
link token, the PKCE verifier, the page's opener origin; ten minutes) and returns the
provider's authorize URL. The callback (``api/routes/connect_flow.py``) takes the state back
once (``take_state``), exchanges the code for tokens at the provider (``exchange_code``) and
connects the account with them, spending the link token (``connect_with_tokens``).
The client id and scopes are the installed integration's ``override.oauth`` (the integration
file's defaults otherwise: ``oauth_client.client_for``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from typing import Any
from urllib.parse import urlencode

import redis
from sqlmodel import Session

from core.errors import ApiError, invalid_request
from core.settings import Settings
from platform_api.integrations.catalog import IntegrationManifest, get_manifest
from platform_api.integrations.provider_access import render
from platform_api.services.connect_flow import complete_session
from platform_api.services.installed_integrations import get_override
from platform_api.services.link_tokens import require_enabled_installation, resolve_link_token
from platform_api.services.oauth_client import client_for, request_tokens
from platform_api.tables.link_token import ConnectSessionCreate

STATE_TTL_S = 600
_STATE_KEY = "switchyard:oauth-state:{}"
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?$")


def callback_url(settings: Settings) -> str:
    """The redirect URI to register with the provider's OAuth app."""
    return f"{settings.base_url}/connect-account/oauth/callback"


def _s256(verifier: str) -> str:
    return (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    )


def start(
    session: Session,
    settings: Settings,
    connection: redis.Redis,
    *,
    link_token: str,
    integration_name: str,
    origin: str | None,
) -> str:
    """The provider's authorize URL for this link token (400/401/409 when it cannot start)."""
    token = resolve_link_token(session, secret=link_token)
    if token.integration_name is not None and integration_name != token.integration_name:
        raise invalid_request(
            f"integration_name: this link token connects {token.integration_name}"
        )
    if origin is not None and not _ORIGIN.match(origin):
        raise invalid_request("origin: an origin such as https://app.example.com")
    installed = require_enabled_installation(
        session, environment_id=token.environment_id, name=integration_name
    )
    manifest = get_manifest(integration_name)
    assert manifest is not None  # require_enabled_installation checked the catalog
    spec, client_id, _, scopes = client_for(manifest, get_override(installed, settings))
    verifier = secrets.token_urlsafe(64)
    state = secrets.token_urlsafe(32)
    # The link token itself is kept (encrypted at rest is Redis's business: ten minutes, once).
    record = {"link_token": link_token, "integration_name": integration_name,
              "verifier": verifier, "origin": origin}  # fmt: skip
    connection.set(_STATE_KEY.format(state), json.dumps(record), ex=STATE_TTL_S)
    query = {
        "response_type": "code", "client_id": client_id, "redirect_uri": callback_url(settings),
        "scope": " ".join(scopes), "state": state,
        "code_challenge": _s256(verifier), "code_challenge_method": "S256",
    }  # fmt: skip
    return f"{render(spec.authorize_url, {}, settings)}?{urlencode(query)}"


def take_state(connection: redis.Redis, state: str) -> dict[str, Any]:
    """The state's record, once; 400 when unknown, expired or already used."""
    raw = connection.getdel(_STATE_KEY.format(state)) if state else None
    if raw is None:
        message = "this sign-in expired or was already used; start again from the link"
        raise ApiError(400, "OAUTH_STATE_INVALID", message)
    record: dict[str, Any] = json.loads(raw)
    return record


async def exchange_code(
    settings: Settings, manifest: IntegrationManifest, override: dict[str, Any], *,
    code: str, verifier: str,
) -> dict[str, str]:  # fmt: skip
    """The provider's tokens for ``code``, as the account's credentials."""
    spec, client_id, secret, _ = client_for(manifest, override)
    form = {"grant_type": "authorization_code", "code": code,
            "redirect_uri": callback_url(settings), "code_verifier": verifier,
            "client_id": client_id, **({"client_secret": secret} if secret else {})}  # fmt: skip
    return await request_tokens(settings, manifest, render(spec.token_url, {}, settings), form)


def connect_with_tokens(
    session: Session, record: dict[str, Any], credentials: dict[str, str], *, settings: Settings
) -> dict[str, Any]:
    """Create (or reauthorize) the account with the tokens, spending the link token."""
    request = ConnectSessionCreate(
        link_token=record["link_token"], integration_name=record["integration_name"],
        credentials=credentials,
    )  # fmt: skip
    result, _ = complete_session(session, request=request, settings=settings, via_oauth=True)
    return result


def override_for(session: Session, settings: Settings, record: dict[str, Any]) -> dict[str, Any]:
    token = resolve_link_token(session, secret=record["link_token"])
    installed = require_enabled_installation(
        session, environment_id=token.environment_id, name=record["integration_name"]
    )
    return get_override(installed, settings)
