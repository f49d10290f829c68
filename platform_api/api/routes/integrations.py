"""``/v1/integration``: the integration catalog."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from platform_api.pagination import PageParamsDep
from platform_api.services.catalog_listing import list_catalog
from platform_api.tables.installed_integration import CatalogPage

router = APIRouter(tags=["Installed integrations"])


@router.get("/integration", response_model=CatalogPage)
def list_integrations(
    params: PageParamsDep,
    category: Annotated[str | None, Query(description="Only this category, e.g. wms.")] = None,
) -> dict[str, Any]:
    """Every integration that can be installed (page envelope)."""
    return list_catalog(category=category, params=params)
