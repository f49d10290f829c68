"""``/v1/environment-integration``: integrations installed in the caller's environment."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from platform_api.api.deps import CurrentPrincipal, SessionDep, SettingsDep
from platform_api.pagination import PageParamsDep
from platform_api.services import installed_integrations as service
from platform_api.tables.installed_integration import (
    InstalledIntegrationCreate,
    InstalledIntegrationPage,
    InstalledIntegrationPublic,
    InstalledIntegrationUpdate,
)

router = APIRouter(tags=["Installed integrations"])

NameFilter = Annotated[
    str | None, Query(alias="integration.name", description="Only this integration.")
]


@router.post("/environment-integration", status_code=201, response_model=InstalledIntegrationPublic)
def install_integration(
    body: InstalledIntegrationCreate,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Install a catalog integration (409 when already installed)."""
    row = service.install(
        session, environment_id=principal.environment_id, integration_name=body.integration_name
    )
    return service.serialize_installed(row, settings=settings)


@router.get("/environment-integration", response_model=InstalledIntegrationPage)
def list_installed_integrations(
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    params: PageParamsDep,
    integration_name: NameFilter = None,
) -> dict[str, Any]:
    return service.list_installed(
        session,
        environment_id=principal.environment_id,
        integration_name=integration_name,
        params=params,
        settings=settings,
    )


@router.get("/environment-integration/{integration_id}", response_model=InstalledIntegrationPublic)
def get_installed_integration(
    integration_id: str, session: SessionDep, principal: CurrentPrincipal, settings: SettingsDep
) -> dict[str, Any]:
    row = service.get_installed(
        session, environment_id=principal.environment_id, installed_id=integration_id
    )
    return service.serialize_installed(row, settings=settings)


@router.patch(
    "/environment-integration/{integration_id}", response_model=InstalledIntegrationPublic
)
def update_installed_integration(
    integration_id: str,
    body: InstalledIntegrationUpdate,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Enable/disable and override OAuth client settings or form settings."""
    row = service.get_installed(
        session, environment_id=principal.environment_id, installed_id=integration_id
    )
    service.update_installed(session, row=row, update=body, settings=settings)
    return service.serialize_installed(row, settings=settings)
