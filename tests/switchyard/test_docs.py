"""/docs works with no network: every asset the page loads is served by the service itself."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from tests.assertions import assert_error

ASSET_TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png"}


def test_docs_page_loads_only_its_own_assets(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert urls, page.text
    assert not [u for u in urls if "//" in u], urls  # nothing from another host
    assert "cdn" not in page.text.lower()
    for url in urls:
        asset = client.get(url)
        assert asset.status_code == 200, url
        kind = next(v for k, v in ASSET_TYPES.items() if url.endswith(k))
        assert kind in asset.headers["content-type"], (url, asset.headers["content-type"])
        assert len(asset.content) > 500, url
    assert "/openapi.json" in page.text
    assert client.get("/openapi.json").json()["info"]["title"] == "Switchyard API"


def test_swagger_oauth2_redirect_page_is_served(client: TestClient) -> None:
    page = client.get("/docs/oauth2-redirect")
    assert page.status_code == 200
    assert "oauth2" in page.text.lower()


def test_redoc_is_not_offered_half_working(client: TestClient) -> None:
    # ReDoc has no packaged build: better absent than a blank page.
    assert_error(client.get("/redoc"), 404, "NOT_FOUND")


def test_docs_page_keeps_the_token_given_to_authorize(client: TestClient) -> None:
    # Without it a reload forgets the token and every "Try it out" answers 401 again.
    assert '"persistAuthorization": true' in client.get("/docs").text
    schemes = client.get("/openapi.json").json()["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["scheme"] == "bearer"
