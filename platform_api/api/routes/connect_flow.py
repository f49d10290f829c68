"""The connect flow in the browser: the hosted connect page, its assets, the link library
``/connect.js``, and the OAuth start and callback (public: the page is authorized by the link
token it carries, through the session endpoints in ``link_tokens``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, RedirectResponse

from core.errors import ApiError, not_found
from platform_api import connect_page
from platform_api.api.deps import SessionDep, SettingsDep
from platform_api.db import session_scope
from platform_api.integrations.catalog import get_manifest
from platform_api.services import connect_flow_oauth

STATIC = Path(connect_page.__file__).parent / "static"
ASSETS = {"connect.css": "text/css", "connect-page.js": "text/javascript"}
# The page holds a link token in its URL: no referrer, no caching, no framing, own scripts only.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
ASSET_HEADERS = {"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"}

public_router = APIRouter(include_in_schema=False)


@public_router.get("/connect-account")
def connect_account_page() -> FileResponse:
    """The page a customer opens from a ``link_url`` (or that ``connect.js`` opens)."""
    return FileResponse(STATIC / "connect.html", media_type="text/html", headers=PAGE_HEADERS)


@public_router.get("/connect-account/assets/{name}")
def connect_account_asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise not_found(f"connect page asset {name}")
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=ASSET_HEADERS)


@public_router.get("/connect.js")
def link_library() -> FileResponse:
    """``Switchyard.connect({linkToken})``: the page in a popup, a Promise of the account."""
    return FileResponse(STATIC / "connect.js", media_type="text/javascript", headers=ASSET_HEADERS)


@public_router.get("/connect-account/oauth/start")
def oauth_start(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    link_token: str,
    integration_name: str,
    origin: str | None = None,
) -> RedirectResponse:
    """The page's "Continue with …" button: off to the provider's authorize page (PKCE)."""
    try:
        url = connect_flow_oauth.start(
            session, settings, request.app.state.redis, link_token=link_token,
            integration_name=integration_name, origin=origin,
        )  # fmt: skip
    except ApiError as exc:
        return _back_to_page("failed", {"message": exc.message}, origin)
    return RedirectResponse(url, status_code=303)


@public_router.get("/connect-account/oauth/callback")
async def oauth_callback(
    request: Request,
    settings: SettingsDep,
    state: str = "",
    code: str = "",
    error: str | None = None,
) -> RedirectResponse:
    """Where the provider sends the customer back: exchange the code, connect the account,
    then show the page's done (or failed) state."""
    redis_client = request.app.state.redis
    try:
        record = await anyio.to_thread.run_sync(connect_flow_oauth.take_state, redis_client, state)
    except ApiError as exc:
        return _back_to_page("failed", {"message": exc.message}, None)
    origin = record.get("origin")
    manifest = get_manifest(record["integration_name"])
    if error or not code or manifest is None:
        label = manifest.label if manifest else "the provider"
        return _back_to_page("failed", {"message": f"access was not granted at {label}"}, origin)

    def _override() -> dict[str, Any]:
        with session_scope(settings) as session:
            return connect_flow_oauth.override_for(session, settings, record)

    def _connect(credentials: dict[str, str]) -> dict[str, Any]:
        with session_scope(settings) as session:
            return connect_flow_oauth.connect_with_tokens(
                session, record, credentials, settings=settings
            )

    try:
        override = await anyio.to_thread.run_sync(_override)
        credentials = await connect_flow_oauth.exchange_code(
            settings, manifest, override, code=code, verifier=record["verifier"]
        )
        result = await anyio.to_thread.run_sync(_connect, credentials)
    except ApiError as exc:
        return _back_to_page("failed", {"message": exc.message}, origin)
    connected = {"integrated_account_id": result["integrated_account_id"],
                 "integration": manifest.name, "label": manifest.label}  # fmt: skip
    return _back_to_page("connected", connected, origin)


def _back_to_page(outcome: str, fields: dict[str, str], origin: str | None) -> RedirectResponse:
    query = {"oauth_result": outcome, **fields, **({"origin": origin} if origin else {})}
    return RedirectResponse(f"/connect-account?{urlencode(query)}", status_code=303)
