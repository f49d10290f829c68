"""Interactive API docs served from this process: Swagger UI's assets come from a package.

FastAPI's default ``/docs`` page loads Swagger UI from a CDN, so it is blank on a machine
without internet access. The assets ship in ``swagger-ui-bundle-v2`` and are served here.
"Authorize" takes an API token (the document's bearer scheme); the page keeps it across
reloads, in the browser's local storage.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

ASSETS = "/docs/assets"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
SWAGGER_UI_PARAMETERS = {"persistAuthorization": True, "displayRequestDuration": True}


def mount_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) with its assets under ``/docs/assets``; create the app with
    ``docs_url=None`` so FastAPI's CDN page is not registered."""
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} — docs",
            oauth2_redirect_url=OAUTH2_REDIRECT,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )

    @app.get(OAUTH2_REDIRECT, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
