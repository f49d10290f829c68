"""Installed integrations: install, read, list, enable/disable and override per environment."""

from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from core.errors import ApiError, conflict, invalid_request, not_found
from core.settings import Settings
from platform_api.crypto import decrypt_json, encrypt_json
from platform_api.ids import new_id
from platform_api.integrations.catalog import get_manifest
from platform_api.pagination import PageParams, paginate
from platform_api.services.merge_patch import merge_patch
from platform_api.services.provider_connection_cache import invalidate_on_commit
from platform_api.tables.common import isoformat, utcnow
from platform_api.tables.installed_integration import (
    InstalledIntegration,
    InstalledIntegrationUpdate,
)

# What the API shows instead of an OAuth client secret; sending it back keeps the stored one.
MASK = "********"
_OAUTH_KEYS = {"client_id": str, "client_secret": str, "scopes": list}


def integration_disabled(name: str) -> ApiError:
    return ApiError(403, "INTEGRATION_DISABLED", f"integration {name} is disabled")


def integration_summary(name: str) -> dict[str, str]:
    """``{name, label, category}``; a name no longer in the catalog still shows its name."""
    manifest = get_manifest(name)
    if manifest is None:
        return {"name": name, "label": name, "category": "unknown"}
    return manifest.summary


def get_override(row: InstalledIntegration, settings: Settings) -> dict[str, Any]:
    """The decrypted override (secrets included): for the connect flow, never for responses."""
    if not row.override_encrypted:
        return {}
    override: dict[str, Any] = decrypt_json(row.override_encrypted, settings)
    return override


def _masked(override: dict[str, Any]) -> dict[str, Any]:
    oauth = override.get("oauth")
    if isinstance(oauth, dict) and oauth.get("client_secret"):
        return {**override, "oauth": {**oauth, "client_secret": MASK}}
    return override


def serialize_installed(row: InstalledIntegration, *, settings: Settings) -> dict[str, Any]:
    """The installed-integration record as the API shows it (client secret masked)."""
    return {
        "id": row.id,
        "integration": integration_summary(row.integration_name),
        "is_enabled": row.is_enabled,
        "override": _masked(get_override(row, settings)),
        "created_at": isoformat(row.created_at),
        "updated_at": isoformat(row.updated_at),
    }


def install(
    session: Session, *, environment_id: str, integration_name: str
) -> InstalledIntegration:
    """Install a catalog integration; 409 when this environment already has it."""
    if get_manifest(integration_name) is None:
        raise invalid_request(f"integration_name: no integration named {integration_name!r}")
    if find_installed(session, environment_id=environment_id, integration_name=integration_name):
        raise conflict(f"integration {integration_name} is already installed")
    row = InstalledIntegration(
        id=new_id("eint"), environment_id=environment_id, integration_name=integration_name
    )
    try:
        # A savepoint, so a concurrent install losing the unique-constraint race is a 409.
        with session.begin_nested():
            session.add(row)
    except IntegrityError as exc:
        raise conflict(f"integration {integration_name} is already installed") from exc
    return row


def find_installed(
    session: Session, *, environment_id: str, integration_name: str
) -> InstalledIntegration | None:
    return session.exec(
        select(InstalledIntegration).where(
            InstalledIntegration.environment_id == environment_id,
            InstalledIntegration.integration_name == integration_name,
        )
    ).first()


def list_all_installed(session: Session, *, environment_id: str) -> list[InstalledIntegration]:
    """Every installation of an environment, by name (for the CLI; the API paginates)."""
    statement = select(InstalledIntegration).where(
        InstalledIntegration.environment_id == environment_id
    )
    return list(session.exec(statement.order_by(InstalledIntegration.integration_name)).all())


def get_installed(
    session: Session, *, environment_id: str, installed_id: str
) -> InstalledIntegration:
    """The installed integration; 404 when missing or in another environment."""
    row = session.get(InstalledIntegration, installed_id)
    if row is None or row.environment_id != environment_id:
        raise not_found(f"installed integration {installed_id}")
    return row


def list_installed(
    session: Session,
    *,
    environment_id: str,
    integration_name: str | None,
    params: PageParams,
    settings: Settings,
) -> dict[str, Any]:
    statement = select(InstalledIntegration).where(
        InstalledIntegration.environment_id == environment_id
    )
    if integration_name is not None:
        statement = statement.where(InstalledIntegration.integration_name == integration_name)
    return paginate(
        session,
        statement,
        id_column=col(InstalledIntegration.id),
        params=params,
        scope=f"environment-integration:{environment_id}:name={integration_name}",
        serialize=partial(serialize_installed, settings=settings),
    )


def _merge_oauth(stored: Any, changes: Any) -> dict[str, Any] | None:
    if changes is None:
        return None
    if not isinstance(changes, dict):
        raise invalid_request("override.oauth: must be an object")
    for key, value in changes.items():
        if key not in _OAUTH_KEYS:
            raise invalid_request(
                f"override.oauth.{key}: unknown key (allowed: client_id, client_secret, scopes)"
            )
        if value is not None and not isinstance(value, _OAUTH_KEYS[key]):
            raise invalid_request(f"override.oauth.{key}: wrong type")
        if key == "scopes" and value is not None and not all(isinstance(s, str) for s in value):
            raise invalid_request("override.oauth.scopes: must be an array of strings")
    if changes.get("client_secret") == MASK:
        changes = {k: v for k, v in changes.items() if k != "client_secret"}
    return merge_patch(stored if isinstance(stored, dict) else {}, changes)


def update_installed(
    session: Session,
    *,
    row: InstalledIntegration,
    update: InstalledIntegrationUpdate,
    settings: Settings,
) -> InstalledIntegration:
    """Apply ``is_enabled`` and merge ``override`` (``null`` removes a key)."""
    if update.is_enabled is not None:
        row.is_enabled = update.is_enabled
    if update.override is not None:
        stored = get_override(row, settings)
        merged = merge_patch(stored, {k: v for k, v in update.override.items() if k != "oauth"})
        if "oauth" in update.override:
            oauth = _merge_oauth(stored.get("oauth"), update.override["oauth"])
            if oauth:
                merged["oauth"] = oauth
            else:
                merged.pop("oauth", None)
        row.override_encrypted = encrypt_json(merged, settings) if merged else None
    row.updated_at = utcnow()
    session.add(row)
    invalidate_on_commit(session, environment_id=row.environment_id)
    return row
