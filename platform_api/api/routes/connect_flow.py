"""The connect flow in the browser: the hosted connect page, its assets, the link library
``/connect.js``, and the OAuth start, callback and result (public: the page is authorized by
the link token it carries, through the session endpoints in ``link_tokens``; back from an OAuth
sign-in, by the one-time result id the callback gave it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import anyio.to_thread
from fastapi import APIRouter, Body, Request, Response
from fastapi.responses import FileResponse, RedirectResponse
from redis import Redis

from core.errors import ApiError, not_found
from core.settings import Settings
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

ResultId = Annotated[str, Body(embed=True, max_length=128)]

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
    """The page's "Continue with …" button: off to the provider's authorize page (PKCE), with
    a cookie binding the state to this browser."""
    redis_client = request.app.state.redis
    try:
        started = connect_flow_oauth.start(
            session, settings, redis_client, link_token=link_token,
            integration_name=integration_name, origin=origin,
        )  # fmt: skip
    except ApiError as exc:
        failed = _failed(exc.message, connect_flow_oauth.valid_origin(origin))
        return _back_to_page(redis_client, failed)
    response = RedirectResponse(started.authorize_url, status_code=303)
    # Lax: the provider sends the browser back with a top-level cross-site GET navigation.
    response.set_cookie(
        started.cookie_name, started.cookie_value, max_age=connect_flow_oauth.STATE_TTL_S,
        path=connect_flow_oauth.CALLBACK_PATH, httponly=True, samesite="lax",
        secure=_over_https(settings),
    )  # fmt: skip
    return response


@public_router.get("/connect-account/oauth/callback")
async def oauth_callback(
    request: Request,
    settings: SettingsDep,
    state: str = "",
    code: str = "",
    error: str | None = None,
) -> RedirectResponse:
    """Where the provider sends the customer back: exchange the code, connect the account,
    then show the page's done (or failed) state. The binding cookie is spent either way."""
    cookie_name = connect_flow_oauth.binding_cookie_name(state)
    outcome = await _finish_oauth(
        settings, request.app.state.redis, state=state, code=code, error=error,
        binding=request.cookies.get(cookie_name),
    )  # fmt: skip
    response = await anyio.to_thread.run_sync(_back_to_page, request.app.state.redis, outcome)
    response.delete_cookie(
        cookie_name, path=connect_flow_oauth.CALLBACK_PATH, httponly=True, samesite="lax",
        secure=_over_https(settings),
    )  # fmt: skip
    return response


async def _finish_oauth(
    settings: Settings, redis_client: Redis, *, state: str, code: str, error: str | None,
    binding: str | None,
) -> dict[str, Any]:  # fmt: skip
    """The flow's outcome for the page: connected (the account) or failed (why)."""
    try:
        record = await anyio.to_thread.run_sync(
            connect_flow_oauth.take_state, redis_client, state, binding
        )
    except ApiError as exc:
        # Not this browser's flow (or none at all): its opener is told nothing.
        return _failed(exc.message, None)
    origin = record.get("origin")
    manifest = get_manifest(record["integration_name"])
    if error or not code or manifest is None:
        label = manifest.label if manifest else "the provider"
        return _failed(f"access was not granted at {label}", origin)

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
        return _failed(exc.message, origin)
    return {"outcome": "connected", "integrated_account_id": result["integrated_account_id"],
            "integration": {"name": manifest.name, "label": manifest.label},
            "origin": origin}  # fmt: skip


@public_router.post("/connect-account/oauth/result")
def redeem_oauth_result(
    request: Request, response: Response, result_id: ResultId
) -> dict[str, Any]:
    """The page, back from the provider, asks once how the sign-in went: only this answer
    (never the page's URL) says which account was connected."""
    response.headers["Cache-Control"] = "no-store"
    return connect_flow_oauth.redeem_result(request.app.state.redis, result_id)


def _over_https(settings: Settings) -> bool:
    return settings.base_url.startswith("https://")


def _failed(message: str, origin: str | None) -> dict[str, Any]:
    return {"outcome": "failed", "message": message, "origin": origin}


def _back_to_page(redis_client: Redis, outcome: dict[str, Any]) -> RedirectResponse:
    """To the page with the outcome's one-time result id (the outcome stays on the server)."""
    result_id = connect_flow_oauth.save_result(redis_client, outcome)
    return RedirectResponse(
        f"/connect-account?{urlencode({'oauth_result': result_id})}", status_code=303
    )
