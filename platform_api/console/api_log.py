"""The console's API log section: the environment's logged calls, newest first and paged,
filtered by integrated account and by status class, through the service ``GET /v1/api-log``
calls."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from platform_api.api.deps import SessionDep, SettingsDep
from platform_api.console import auth
from platform_api.console.pages import ConsoleRefusal, ConsoleRoute, render
from platform_api.console.relative_time import ago_for
from platform_api.pagination import DEFAULT_LIMIT, MAX_LIMIT, PageParams, cursor_key
from platform_api.services import accounts as account_service
from platform_api.services.api_log import list_api_log
from platform_api.services.api_log_writer import flush_api_log

router = APIRouter(route_class=ConsoleRoute)

STATUS_CLASSES = {"2xx": 2, "4xx": 4, "5xx": 5}


@router.get("/{environment}/api-log")
def api_log_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    session: SessionDep,
    settings: SettingsDep,
    now: auth.NowDep,
    account: str = "",
    status: str = "",
    cursor: str = "",
) -> Response:
    """A page of the environment's API log (an account's only, one status class only)."""
    account, status = account.strip(), status.strip()
    if status and status not in STATUS_CLASSES:
        raise ConsoleRefusal(400, f"status: one of {', '.join(STATUS_CLASSES)}")
    flush_api_log(settings)  # this process's queued rows are visible at once, as in /v1
    page = list_api_log(
        session,
        environment_id=environment,
        integrated_account_id=account or None,
        status_class=STATUS_CLASSES.get(status),
        params=PageParams(
            limit=DEFAULT_LIMIT, next_cursor=cursor or None, cursor_key=cursor_key(settings)
        ),
    )
    # The filter's choices and the tenant id shown for each entry's account.
    accounts = account_service.list_accounts(
        session, environment_id=environment, integration_name=None, tenant_id=None,
        params=PageParams(limit=MAX_LIMIT, next_cursor=None, cursor_key=cursor_key(settings)),
    )["result"]  # fmt: skip
    context = {
        "operator": signed_in.user,
        "environment": environment,
        "csrf_token": signed_in.session.csrf_token,
        "section": "api-log",
        "ago": ago_for(now),
        "entries": page["result"],
        "next_cursor": page["next_cursor"],
        "tenants": {a["id"]: a["tenant_id"] for a in accounts},
        "account": account,
        "status": status,
        "status_classes": list(STATUS_CLASSES),
        "first_page": not cursor,
    }
    return render(request, "api_log.html", context)
