"""The hosted connect page, its assets, and the link library ``/connect.js`` (public: the
page is authorized by the link token it carries, through the session endpoints)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from core.errors import not_found
from platform_api import connect_page

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
