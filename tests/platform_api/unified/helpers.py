"""Factories for the unified-API tests: accounts pointed at a loopback upstream, page walks."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.services import accounts
from platform_api.services.installed_integrations import find_installed, install
from platform_api.tables.integrated_account import IntegratedAccountUpdate


def make_account(
    integration: str,
    credentials: dict[str, str],
    *,
    base_url: str | None,
    environment: str = "development",
    tenant_id: str = "tenant-1",
) -> str:
    """An active account of ``integration`` whose upstream is ``base_url`` (a fake)."""
    settings = get_settings()
    with session_scope(settings) as session:
        installed = find_installed(
            session, environment_id=environment, integration_name=integration
        ) or install(session, environment_id=environment, integration_name=integration)
        session.flush()
        account = accounts.create_account(
            session,
            installed=installed,
            tenant_id=tenant_id,
            credentials=credentials,
            settings=settings,
        )
        session.flush()
        if base_url is not None:
            accounts.update_account(
                session,
                account=account,
                update=IntegratedAccountUpdate(override={"base_url": base_url}),
                settings=settings,
            )
        return account.id


def walk_pages(
    client: TestClient,
    url: str,
    headers: dict[str, str],
    params: dict[str, Any],
    *,
    max_pages: int = 50,
) -> list[list[dict[str, Any]]]:
    """Every page of a unified (or proxy) list, following next_cursor until null."""
    pages: list[list[dict[str, Any]]] = []
    cursor = None
    for _ in range(max_pages):
        query = dict(params)
        if cursor:
            query["next_cursor"] = cursor
        response = client.get(url, params=query, headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"result", "next_cursor"}
        pages.append(body["result"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError("pagination did not end")
