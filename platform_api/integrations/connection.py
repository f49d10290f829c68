"""How an integrated account reaches its upstream: the base URL and the auth parts.

The unified-API engine calls these with an account's decrypted credentials, its context and
its override, so every provider is driven by its manifest alone.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.settings import Settings
from platform_api.integrations.catalog import AuthApply, IntegrationManifest, placeholders


class MissingValueError(ValueError):
    """A ``{placeholder}`` that neither the context, the credentials nor the settings fill."""


class _SettingsNamespace:
    """``{settings.sandbox_url}``: a setting, preferring its ``resolved_*`` form."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def __getattr__(self, name: str) -> Any:
        resolved = getattr(self._settings, f"resolved_{name}", None)
        value = resolved if resolved is not None else getattr(self._settings, name, None)
        if value is None:
            raise MissingValueError(f"setting {name} is not set")
        return str(value)


def render(template: str, values: Mapping[str, Any], settings: Settings | None = None) -> str:
    """Fill ``{name}`` and ``{settings.name}`` placeholders; MissingValueError names a gap."""
    missing = {
        p for p in placeholders(template) if not p.startswith("settings.") and p not in values
    }
    if missing:
        raise MissingValueError(f"no value for {', '.join(sorted(missing))}")
    namespace: dict[str, Any] = {k: str(v) for k, v in values.items()}
    if settings is not None:
        namespace["settings"] = _SettingsNamespace(settings)
    return string.Formatter().vformat(template, (), namespace)


def resolve_base_url(
    manifest: IntegrationManifest,
    *,
    credentials: Mapping[str, Any],
    context: Mapping[str, Any] | None = None,
    override: Mapping[str, Any] | None = None,
    settings: Settings,
) -> str:
    """The account's upstream base URL.

    An account override ``base_url`` (for self-hosted or test upstreams) wins; otherwise the
    manifest's template is filled from the context, then the credentials, then settings.
    """
    if override and isinstance(override.get("base_url"), str):
        return override["base_url"].rstrip("/")
    values = {**credentials, **(context or {})}
    return render(manifest.base_url, values, settings).rstrip("/")


@dataclass
class AuthParts:
    """What to add to an upstream request."""

    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    basic: tuple[str, str] | None = None


def _apply(spec: AuthApply, credentials: Mapping[str, Any]) -> AuthParts:
    return AuthParts(
        headers={k: render(v, credentials) for k, v in spec.headers.items()},
        query={k: render(v, credentials) for k, v in spec.query.items()},
        basic=(
            (render(spec.basic.username, credentials), render(spec.basic.password, credentials))
            if spec.basic
            else None
        ),
    )


def _fills(spec: AuthApply, credentials: Mapping[str, Any]) -> bool:
    return all(p in credentials for t in spec.templates() for p in placeholders(t))


def auth_parts(manifest: IntegrationManifest, credentials: Mapping[str, Any]) -> AuthParts:
    """Headers, query parameters or basic auth for ``credentials``.

    Credentials entered on the connect page use ``auth.apply``; credentials obtained through
    OAuth (an ``access_token`` but not the manifest's own fields) use ``auth.oauth2.apply``.
    """
    auth = manifest.auth
    if _fills(auth.apply, credentials) and auth.apply.templates():
        return _apply(auth.apply, credentials)
    if auth.oauth2 is not None and _fills(auth.oauth2.apply, credentials):
        return _apply(auth.oauth2.apply, credentials)
    return _apply(auth.apply, credentials)  # raises MissingValueError naming the gap
