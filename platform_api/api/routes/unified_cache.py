"""/unified_cache/returns: the returns sync runs copied, read without a provider call."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from platform_api.api.deps import CurrentPrincipal, SessionDep
from platform_api.pagination import PageParamsDep
from platform_api.sync import cache
from platform_api.unified.schemas import ReturnStatus

router = APIRouter(tags=["Cached returns"])

AccountQuery = Annotated[
    str, Query(min_length=1, max_length=40, description="The connected account.")
]


@router.get("/unified_cache/returns")
def list_cached_returns(
    session: SessionDep,
    principal: CurrentPrincipal,
    page: PageParamsDep,
    integrated_account_id: AccountQuery,
    status: Annotated[
        ReturnStatus | None, Query(description="Only returns in this status.")
    ] = None,
    updated_after: Annotated[
        str | None,
        Query(
            max_length=40,
            description="Only returns updated after this ISO 8601 time.",
            json_schema_extra={"format": "date-time"},
        ),
    ] = None,
) -> dict[str, Any]:
    """Return records with every unified field plus `cached_at`, by id."""
    return cache.list_returns(
        session, environment_id=principal.environment_id,
        integrated_account_id=integrated_account_id,
        params=page, status=status, updated_after=updated_after,
    )  # fmt: skip


@router.get("/unified_cache/returns/{return_id}")
def get_cached_return(
    return_id: str,
    session: SessionDep,
    principal: CurrentPrincipal,
    integrated_account_id: AccountQuery,
) -> dict[str, Any]:
    return cache.get_return(
        session, environment_id=principal.environment_id,
        integrated_account_id=integrated_account_id,
        return_id=return_id,
    )  # fmt: skip
