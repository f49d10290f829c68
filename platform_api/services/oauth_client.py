"""An installed integration's OAuth client and its requests to the provider's token endpoint.

Shared by the two places tokens come from: the connect flow's authorization-code exchange
(``connect_flow_oauth``) and the refresh of an account's access token (``oauth_refresh``).

A token request has a deadline (``token_request_deadline_s``): the refresh lock must outlive
it, and the provider's read timeout alone bounds each wait for data, not the whole answer.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from core.errors import ApiError, invalid_request
from core.settings import Settings
from platform_api.integrations.catalog import IntegrationManifest, OAuth2Spec
from platform_api.tables.common import isoformat, utcnow
from platform_api.unified import upstream


def client_for(
    manifest: IntegrationManifest, override: dict[str, Any]
) -> tuple[OAuth2Spec, str, str | None, list[str]]:
    """The OAuth client to use: the installed integration's ``override.oauth``, else the
    integration file's defaults; its spec and scopes."""
    spec = manifest.auth.oauth2
    if spec is None:
        raise invalid_request(f"integration_name: {manifest.name} does not connect with OAuth")
    oauth = override.get("oauth") or {}
    client_id = oauth.get("client_id") or spec.default_client_id
    if not client_id:
        raise ApiError(
            409, "OAUTH_NOT_CONFIGURED",
            f"{manifest.label} needs your OAuth app: set override.oauth.client_id and "
            "client_secret on the installed integration",
        )  # fmt: skip
    secret = oauth.get("client_secret") or spec.default_client_secret
    return spec, client_id, secret, list(oauth.get("scopes") or spec.default_scopes)


def token_request_deadline_s(settings: Settings) -> float:
    """The longest a token request may take: each attempt (the first, then one per 429 retry)
    a connect timeout and a read timeout, and between attempts the longest Retry-After the
    provider calls wait out."""
    attempts = settings.upstream_max_retries + 1
    per_attempt = 2 * settings.upstream_timeout_s  # connecting (pool wait included), answering
    waits = settings.upstream_max_retries * settings.upstream_retry_max_sleep_s
    return attempts * per_attempt + waits


async def request_tokens(
    settings: Settings, manifest: IntegrationManifest, token_url: str, form: dict[str, str]
) -> dict[str, str]:
    """POST a token request (code or refresh); the answer as credentials with ``expires_at``.
    503 ``PROVIDER_UNAVAILABLE`` when the provider cannot be asked or does not answer within
    ``token_request_deadline_s``."""
    try:
        async with asyncio.timeout(token_request_deadline_s(settings)):
            response = await upstream.send(settings, method="POST", url=token_url, data=form)
    except (ApiError, TimeoutError) as exc:
        raise ApiError(503, "PROVIDER_UNAVAILABLE",
                       f"{manifest.label} could not be reached; try again shortly",
                       headers={"Retry-After": "5"}) from exc  # fmt: skip
    body = response.body if isinstance(response.body, dict) else {}
    if not response.ok or not body.get("access_token"):
        reason = body.get("error_description") or body.get("error") or f"HTTP {response.status}"
        raise ApiError(400, "OAUTH_EXCHANGE_FAILED", f"{manifest.label} refused: {reason}")
    credentials = {"access_token": str(body["access_token"]),
                   "token_type": str(body.get("token_type", "Bearer"))}  # fmt: skip
    if body.get("refresh_token"):
        credentials["refresh_token"] = str(body["refresh_token"])
    if body.get("scope"):
        credentials["scope"] = str(body["scope"])
    if isinstance(body.get("expires_in"), int | float):
        expires = utcnow() + timedelta(seconds=float(body["expires_in"]))
        credentials["expires_at"] = isoformat(expires) or ""
    return credentials
