"""API log: the unified and proxy calls made for integrated accounts, newest first."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from platform_api.api.deps import CurrentPrincipal, SessionDep, SettingsDep
from platform_api.pagination import PageParamsDep
from platform_api.services.api_log import list_api_log
from platform_api.services.api_log_writer import flush_api_log

router = APIRouter(tags=["API log"])


@router.get("/api-log", summary="List API log entries of the environment or of one account")
def list_api_log_entries(
    principal: CurrentPrincipal,
    session: SessionDep,
    settings: SettingsDep,
    page: PageParamsDep,
    integrated_account_id: Annotated[
        str | None, Query(description="Only this account's calls.")
    ] = None,
) -> dict[str, Any]:
    flush_api_log(settings)  # this process's queued rows are visible at once
    return list_api_log(
        session,
        environment_id=principal.environment_id,
        integrated_account_id=integrated_account_id,
        params=page,
    )
