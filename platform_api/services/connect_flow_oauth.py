"""The connect flow's OAuth 2.0 leg: authorization code with PKCE, from the connect page.

``start`` checks the link token and the integration, keeps a one-time ``state`` in Redis (the
link token, the PKCE verifier, the page's opener origin, the hash of a browser binding; ten
minutes) and returns the provider's authorize URL with the binding, which the route sets as a
cookie on the callback's path. The callback (``api/routes/connect_flow.py``) takes the state
back once, and only with that cookie (``take_state``): an authorize URL opened in another
browser connects nothing. It exchanges the code for tokens at the provider
(``exchange_code``), connects the account with them, spending the link token
(``connect_with_tokens``), and keeps the outcome under a one-time result id (``save_result``)
that the page redeems (``redeem_result``): the page reports what the server says, never what
its own URL says.
The client id and scopes are the installed integration's ``override.oauth`` (the integration
file's defaults otherwise: ``oauth_client.client_for``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from typing import Any, NamedTuple
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
RESULT_TTL_S = 300
CALLBACK_PATH = "/connect-account/oauth/callback"
_STATE_KEY = "switchyard:oauth-state:{}"
_RESULT_KEY = "switchyard:oauth-result:{}"
_BINDING_COOKIE = "switchyard_oauth_{}"
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?$")


def callback_url(settings: Settings) -> str:
    """The redirect URI to register with the provider's OAuth app."""
    return f"{settings.base_url}{CALLBACK_PATH}"


class Started(NamedTuple):
    """Where to send the browser, and the cookie that binds the state to it."""

    authorize_url: str
    cookie_name: str
    cookie_value: str


def binding_cookie_name(state: str) -> str:
    """One cookie per state, so two sign-ins under way in one browser do not undo each other."""
    return _BINDING_COOKIE.format(hashlib.sha256(state.encode()).hexdigest()[:16])


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def valid_origin(origin: str | None) -> str | None:
    """``origin`` when it has the form of an origin (postMessage needs one), else None."""
    return origin if origin is not None and _ORIGIN.match(origin) else None


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
) -> Started:
    """The provider's authorize URL for this link token and the browser binding to set as a
    cookie (400/401/409 when it cannot start)."""
    token = resolve_link_token(session, secret=link_token)
    if token.integration_name is not None and integration_name != token.integration_name:
        raise invalid_request(
            f"integration_name: this link token connects {token.integration_name}"
        )
    if origin is not None and valid_origin(origin) is None:
        raise invalid_request("origin: an origin such as https://app.example.com")
    installed = require_enabled_installation(
        session, environment_id=token.environment_id, name=integration_name
    )
    manifest = get_manifest(integration_name)
    assert manifest is not None  # require_enabled_installation checked the catalog
    spec, client_id, _, scopes = client_for(manifest, get_override(installed, settings))
    verifier = secrets.token_urlsafe(64)
    state = secrets.token_urlsafe(32)
    # Only the binding's hash is kept: what Redis holds cannot complete the flow on its own.
    binding = secrets.token_urlsafe(32)
    # The link token itself is kept (encrypted at rest is Redis's business: ten minutes, once).
    record = {"link_token": link_token, "integration_name": integration_name,
              "verifier": verifier, "origin": origin, "binding": _sha256(binding)}  # fmt: skip
    connection.set(_STATE_KEY.format(state), json.dumps(record), ex=STATE_TTL_S)
    query = {
        "response_type": "code", "client_id": client_id, "redirect_uri": callback_url(settings),
        "scope": " ".join(scopes), "state": state,
        "code_challenge": _s256(verifier), "code_challenge_method": "S256",
    }  # fmt: skip
    url = f"{render(spec.authorize_url, {}, settings)}?{urlencode(query)}"
    return Started(url, binding_cookie_name(state), binding)


def _state_invalid() -> ApiError:
    message = "this sign-in expired or was already used; start again from the link"
    return ApiError(400, "OAUTH_STATE_INVALID", message)


def take_state(connection: redis.Redis, state: str, binding: str | None) -> dict[str, Any]:
    """The state's record, once, for the browser that started it (``binding``: its cookie).

    400 ``OAUTH_STATE_INVALID`` when unknown, expired or already used; 400
    ``OAUTH_BROWSER_MISMATCH`` when the cookie is missing or another's, leaving the state to
    the browser that holds the right one.
    """
    key = _STATE_KEY.format(state)
    raw = connection.get(key) if state else None
    if raw is None:
        raise _state_invalid()
    record: dict[str, Any] = json.loads(raw)
    if not binding or not hmac.compare_digest(_sha256(binding), str(record.get("binding"))):
        message = ("this sign-in was started in another browser, or took too long; "
                   "start again from the link in this browser")  # fmt: skip
        raise ApiError(400, "OAUTH_BROWSER_MISMATCH", message)
    if connection.getdel(key) is None:  # taken meanwhile by a concurrent callback
        raise _state_invalid()
    return record


def save_result(connection: redis.Redis, outcome: dict[str, Any]) -> str:
    """Keep the flow's outcome for the page to redeem once; returns its result id."""
    result_id = secrets.token_urlsafe(32)
    connection.set(_RESULT_KEY.format(result_id), json.dumps(outcome), ex=RESULT_TTL_S)
    return result_id


def redeem_result(connection: redis.Redis, result_id: str) -> dict[str, Any]:
    """The outcome kept under ``result_id``, once; 400 ``OAUTH_RESULT_INVALID`` otherwise."""
    raw = connection.getdel(_RESULT_KEY.format(result_id)) if result_id else None
    if raw is None:
        message = "this sign-in result is unknown, expired or was already shown"
        raise ApiError(400, "OAUTH_RESULT_INVALID", message)
    outcome: dict[str, Any] = json.loads(raw)
    return outcome


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
