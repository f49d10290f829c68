"""``/v1/link-token`` and the connect page's session endpoints (authorized by a link token)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from platform_api.api.deps import CurrentPrincipal, SessionDep, SettingsDep
from platform_api.services import connect_flow, link_tokens
from platform_api.tables.link_token import (
    ConnectResult,
    ConnectSessionCreate,
    ConnectSessionPublic,
    LinkTokenCreate,
    LinkTokenPublic,
)

router = APIRouter(tags=["Link tokens"])
public_router = APIRouter(tags=["Connect account"])


@router.post("/link-token", status_code=201, response_model=LinkTokenPublic)
def create_link_token(
    body: LinkTokenCreate,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """A single-use link token for a new connection (``tenant_id``) or a reauthorization."""
    return link_tokens.create_link_token(
        session, environment_id=principal.environment_id, request=body, settings=settings
    )


@public_router.get("/connect-account/session", response_model=ConnectSessionPublic)
def get_connect_session(
    session: SessionDep,
    settings: SettingsDep,
    link_token: Annotated[str, Query(description="The link token.")],
) -> dict[str, Any]:
    """The integrations this link token may connect and the credential fields each needs."""
    return connect_flow.describe_session(session, secret=link_token, settings=settings)


@public_router.post("/connect-account/session", status_code=201, response_model=ConnectResult)
def connect_account(
    body: ConnectSessionCreate, session: SessionDep, settings: SettingsDep, response: Response
) -> dict[str, Any]:
    """Connect the account (201), or replace a reauthorized account's credentials (200)."""
    result, created = connect_flow.complete_session(session, request=body, settings=settings)
    if not created:
        response.status_code = 200
    return result
