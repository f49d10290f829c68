"""The console's integrated accounts section: a searchable, paged list; an account's page;
a reconnect link (shown once); deletion after a confirmation page."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response

from platform_api.api.deps import SessionDep, SettingsDep
from platform_api.console import auth
from platform_api.console.pages import ConsoleRefusal, ConsoleRoute, redirect, render
from platform_api.console.relative_time import ago_for
from platform_api.pagination import DEFAULT_LIMIT, PageParams, cursor_key
from platform_api.services import accounts as account_service
from platform_api.services import link_tokens
from platform_api.services.api_log import last_calls
from platform_api.services.api_log_writer import flush_api_log
from platform_api.services.console_users import SignedIn
from platform_api.tables.link_token import LinkTokenCreate

router = APIRouter(route_class=ConsoleRoute)

STATUSES = ("active", "needs_reauth")
# What a redirect back to the list may announce (a fixed text: nothing from the URL is shown).
NOTICES = {"deleted": "The account is deleted, with its credentials, logs and cached data."}


def _page_context(
    signed_in: SignedIn, environment: str, now: datetime, **extra: Any
) -> dict[str, Any]:
    return {
        "operator": signed_in.user,
        "environment": environment,
        "csrf_token": signed_in.session.csrf_token,
        "section": "accounts",
        "ago": ago_for(now),
        **extra,
    }


@router.get("/{environment}/accounts")
def account_list(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    session: SessionDep,
    settings: SettingsDep,
    now: auth.NowDep,
    tenant_id: str = "",
    status: str = "",
    cursor: str = "",
    notice: str | None = None,
) -> Response:
    tenant_id, status = tenant_id.strip(), status.strip()
    if status and status not in STATUSES:
        raise ConsoleRefusal(400, f"status: one of {', '.join(STATUSES)}")
    params = PageParams(
        limit=DEFAULT_LIMIT, next_cursor=cursor or None, cursor_key=cursor_key(settings)
    )
    page = account_service.list_accounts(
        session,
        environment_id=environment,
        integration_name=None,
        tenant_id=tenant_id or None,
        status=status or None,
        params=params,
    )
    called = last_calls(
        session, environment_id=environment, account_ids=[a["id"] for a in page["result"]]
    )
    context = _page_context(
        signed_in, environment, now,
        accounts=page["result"], next_cursor=page["next_cursor"], last_calls=called,
        tenant_id=tenant_id, status=status, statuses=STATUSES, first_page=not cursor,
        notice=NOTICES.get(notice or ""),
    )  # fmt: skip
    return render(request, "accounts.html", context)


@router.get("/{environment}/accounts/{account_id}")
def account_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    account_id: str,
    session: SessionDep,
    now: auth.NowDep,
) -> Response:
    account = account_service.get_account(
        session, environment_id=environment, integrated_account_id=account_id
    )
    called = last_calls(session, environment_id=environment, account_ids=[account.id])
    context = _page_context(
        signed_in, environment, now,
        account=account_service.serialize_account(account), last_call=called.get(account.id),
    )  # fmt: skip
    return render(request, "account.html", context)


@router.post("/{environment}/accounts/{account_id}/reconnect")
def account_reconnect(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    account_id: str,
    session: SessionDep,
    settings: SettingsDep,
    now: auth.NowDep,
) -> Response:
    """A link token reauthorizing the account, as ``POST /v1/link-token`` makes one."""
    account = account_service.get_account(
        session, environment_id=environment, integrated_account_id=account_id
    )
    link = link_tokens.create_link_token(
        session,
        environment_id=environment,
        request=LinkTokenCreate(integrated_account_id=account.id),
        settings=settings,
    )
    context = _page_context(
        signed_in, environment, now, account=account_service.serialize_account(account), link=link
    )
    return render(request, "account_reconnect.html", context, status_code=201)


@router.get("/{environment}/accounts/{account_id}/delete")
def account_delete_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    account_id: str,
    session: SessionDep,
    now: auth.NowDep,
) -> Response:
    """Ask before deleting: the form on this page does it."""
    account = account_service.get_account(
        session, environment_id=environment, integrated_account_id=account_id
    )
    context = _page_context(
        signed_in, environment, now, account=account_service.serialize_account(account)
    )
    return render(request, "account_delete.html", context)


@router.post("/{environment}/accounts/{account_id}/delete")
def account_delete(
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    account_id: str,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """Delete the account as ``DELETE /v1/integrated-account/{id}`` does."""
    account = account_service.get_account(
        session, environment_id=environment, integrated_account_id=account_id
    )
    flush_api_log(settings)  # queued rows are written now, so the deletion takes them too
    account_service.delete_account(session, account=account, settings=settings)
    return redirect(f"/console/{environment}/accounts?notice=deleted")
