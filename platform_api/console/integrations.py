"""The console's integrations section: the catalog with what this environment installed;
install, enable/disable, and the override edited as JSON (secrets masked as the API masks
them)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlmodel import Session

from core.errors import ApiError
from core.settings import Settings
from platform_api.api.deps import SessionDep, SettingsDep
from platform_api.console import auth
from platform_api.console.pages import ConsoleRoute, redirect, render
from platform_api.console.relative_time import ago_for
from platform_api.pagination import MAX_LIMIT, PageParams, cursor_key
from platform_api.services import installed_integrations as service
from platform_api.services.catalog_listing import list_catalog
from platform_api.services.console_users import SignedIn
from platform_api.tables.installed_integration import InstalledIntegrationUpdate

router = APIRouter(route_class=ConsoleRoute)

# What a redirect may announce (a fixed text: nothing from the URL is shown).
NOTICES = {
    "installed": "The integration is installed and enabled.",
    "enabled": "The integration is enabled.",
    "disabled": "The integration is disabled: its accounts' calls are refused until enabled.",
    "override-saved": "The override is saved.",
}


def _page_context(
    signed_in: SignedIn, environment: str, now: datetime, **extra: Any
) -> dict[str, Any]:
    return {
        "operator": signed_in.user,
        "environment": environment,
        "csrf_token": signed_in.session.csrf_token,
        "section": "integrations",
        "ago": ago_for(now),
        **extra,
    }


@router.get("/{environment}/integrations")
def integration_list(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    session: SessionDep,
    settings: SettingsDep,
    now: auth.NowDep,
    notice: str | None = None,
) -> Response:
    # The catalog is a handful of files: one page of the largest size holds it all.
    params = PageParams(limit=MAX_LIMIT, next_cursor=None, cursor_key=cursor_key(settings))
    catalog = list_catalog(category=None, params=params)["result"]
    installed = {
        row.integration_name: service.serialize_installed(row, settings=settings)
        for row in service.list_all_installed(session, environment_id=environment)
    }
    context = _page_context(
        signed_in, environment, now,
        catalog=catalog, installed=installed, notice=NOTICES.get(notice or ""),
    )  # fmt: skip
    return render(request, "integrations.html", context)


@router.post("/{environment}/integrations")
def integration_install(
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    form: auth.FormDep,
    session: SessionDep,
) -> Response:
    service.install(
        session, environment_id=environment, integration_name=form.get("integration_name", "")
    )
    return redirect(f"/console/{environment}/integrations?notice=installed")


def _installed_page(
    request: Request,
    session: Session,
    settings: Settings,
    signed_in: SignedIn,
    environment: str,
    now: datetime,
    installed_id: str,
    *,
    override_text: str | None = None,
    error: str | None = None,
) -> Response:
    row = service.get_installed(session, environment_id=environment, installed_id=installed_id)
    record = service.serialize_installed(row, settings=settings)
    if override_text is None:
        override_text = json.dumps(record["override"], indent=2, sort_keys=True)
    context = _page_context(
        signed_in, environment, now,
        record=record, override_text=override_text, error=error, mask=service.MASK,
    )  # fmt: skip
    return render(request, "integration.html", context, status_code=400 if error else 200)


@router.get("/{environment}/integrations/{installed_id}")
def integration_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    installed_id: str,
    session: SessionDep,
    settings: SettingsDep,
    now: auth.NowDep,
) -> Response:
    return _installed_page(request, session, settings, signed_in, environment, now, installed_id)


@router.post("/{environment}/integrations/{installed_id}/enabled")
def integration_enable(
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    form: auth.FormDep,
    installed_id: str,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """``enabled=true`` enables the integration, anything else disables it."""
    row = service.get_installed(session, environment_id=environment, installed_id=installed_id)
    enabled = form.get("enabled") == "true"
    service.update_installed(
        session, row=row, update=InstalledIntegrationUpdate(is_enabled=enabled), settings=settings
    )
    notice = "enabled" if enabled else "disabled"
    return redirect(f"/console/{environment}/integrations?notice={notice}")


@router.post("/{environment}/integrations/{installed_id}/override")
def integration_override(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    form: auth.FormDep,
    installed_id: str,
    session: SessionDep,
    settings: SettingsDep,
    now: auth.NowDep,
) -> Response:
    """Merge the posted JSON object into the override, as ``PATCH`` does; on invalid JSON or
    a value the service refuses, the page again with the message and the text as typed."""
    row = service.get_installed(session, environment_id=environment, installed_id=installed_id)
    text = form.get("override", "")
    try:
        override = json.loads(text)
    except ValueError as exc:
        error = f"override: not valid JSON ({exc})"
    else:
        if not isinstance(override, dict):
            error = "override: must be a JSON object"
        else:
            try:
                service.update_installed(
                    session,
                    row=row,
                    update=InstalledIntegrationUpdate(override=override),
                    settings=settings,
                )
            except ApiError as exc:
                error = exc.message
            else:
                return redirect(f"/console/{environment}/integrations?notice=override-saved")
    session.rollback()  # nothing of a refused change is kept
    return _installed_page(
        request, session, settings, signed_in, environment, now, installed_id,
        override_text=text, error=error,
    )  # fmt: skip
