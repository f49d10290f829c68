"""The console's router: its entry point, its stylesheet and every section's pages."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse, Response

from platform_api.console import accounts, integrations, sign_in, tokens
from platform_api.console import api_log as console_api_log
from platform_api.console import inference as console_inference
from platform_api.console import sync as console_sync
from platform_api.console import webhooks as console_webhooks
from platform_api.console.auth import OperatorDep
from platform_api.console.pages import STATIC, ConsoleRoute, redirect

ASSET_HEADERS = {"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"}

router = APIRouter(prefix="/console", include_in_schema=False, route_class=ConsoleRoute)


@router.get("")
def console_home(signed_in: OperatorDep) -> Response:
    """The first section of the operator's first environment (the sign-in page without a
    session)."""
    return redirect(f"/console/{signed_in.user.environments[0]}/tokens")


@router.get("/assets/console.css")
def stylesheet() -> FileResponse:
    return FileResponse(STATIC / "console.css", media_type="text/css", headers=ASSET_HEADERS)


router.include_router(sign_in.router)
router.include_router(tokens.router)
router.include_router(console_sync.router)
router.include_router(console_webhooks.router)
router.include_router(integrations.router)
router.include_router(accounts.router)
router.include_router(console_api_log.router)
router.include_router(console_inference.router)
