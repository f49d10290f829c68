"""``/v1/integrated-account``: connected accounts of the caller's environment."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from platform_api.api.deps import CurrentPrincipal, SessionDep, SettingsDep
from platform_api.pagination import PageParamsDep
from platform_api.services import accounts as service
from platform_api.services.api_log_writer import flush_api_log
from platform_api.tables.integrated_account import (
    IntegratedAccountPage,
    IntegratedAccountPublic,
    IntegratedAccountUpdate,
)

router = APIRouter(tags=["Integrated accounts"])


@router.get("/integrated-account", response_model=IntegratedAccountPage)
def list_integrated_accounts(
    session: SessionDep,
    principal: CurrentPrincipal,
    params: PageParamsDep,
    integration_name: Annotated[str | None, Query(alias="integration.name")] = None,
    tenant_id: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    return service.list_accounts(
        session,
        environment_id=principal.environment_id,
        integration_name=integration_name,
        tenant_id=tenant_id,
        params=params,
    )


@router.get("/integrated-account/{account_id}", response_model=IntegratedAccountPublic)
def get_integrated_account(
    account_id: str, session: SessionDep, principal: CurrentPrincipal
) -> dict[str, Any]:
    account = service.get_account(
        session, environment_id=principal.environment_id, integrated_account_id=account_id
    )
    return service.serialize_account(account)


@router.patch("/integrated-account/{account_id}", response_model=IntegratedAccountPublic)
def update_integrated_account(
    account_id: str,
    body: IntegratedAccountUpdate,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Merge ``context`` and ``override`` into the account (``null`` removes a key)."""
    account = service.get_account(
        session, environment_id=principal.environment_id, integrated_account_id=account_id
    )
    service.update_account(session, account=account, update=body, settings=settings)
    return service.serialize_account(account)


@router.delete("/integrated-account/{account_id}", status_code=204)
def delete_integrated_account(
    account_id: str, session: SessionDep, settings: SettingsDep, principal: CurrentPrincipal
) -> Response:
    """Delete the account permanently, with its credentials, logs and cached data."""
    account = service.get_account(
        session, environment_id=principal.environment_id, integrated_account_id=account_id
    )
    flush_api_log(settings)  # queued rows are written now, so the deletion takes them too
    service.delete_account(session, account=account, settings=settings)
    return Response(status_code=204)
