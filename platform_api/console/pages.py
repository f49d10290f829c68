"""Rendering console pages, and the route class that turns a refusal into a page."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request, Response
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates

from core.errors import ApiError
from platform_api.tables.common import as_utc

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
templates = Jinja2Templates(directory=HERE / "templates")


def _utc(value: datetime | None) -> str:
    moment = as_utc(value)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else ""


templates.env.filters["utc"] = _utc

SIGN_IN_PATH = "/console/sign-in"
SESSION_COOKIE = "sy_console"
COOKIE_PATH = "/console"
# Own stylesheet only, no script at all, forms post only here, never framed or cached.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


class ConsoleRefusal(Exception):
    """A request the console refuses with a page (403 CSRF, 404 another environment…)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


class SignInRequired(Exception):
    """No live session: the browser is sent to the sign-in page (its cookie cleared)."""


def render(
    request: Request,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A console page with the console's security headers."""
    return templates.TemplateResponse(
        request,
        template,
        dict(context or {}),
        status_code=status_code,
        headers={**PAGE_HEADERS, **(headers or {})},
    )


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers={"Cache-Control": "no-store"})


def _error_page(
    request: Request, status_code: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    return render(
        request, "error.html", {"status_code": status_code, "message": message},
        status_code=status_code, headers=headers,
    )  # fmt: skip


class ConsoleRoute(APIRoute):
    """Console routes answer refusals with a page or a redirect, never the API's JSON."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def console_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                response = redirect(SIGN_IN_PATH)
                response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH)
                return response
            except ConsoleRefusal as exc:
                return _error_page(request, exc.status_code, exc.message)
            except ApiError as exc:
                return _error_page(request, exc.status_code, exc.message, exc.headers)

        return console_handler
