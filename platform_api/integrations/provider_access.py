"""How an integrated account reaches its provider: the base URL and the auth parts that its
provider credentials fill in.

The unified-API engine calls these with an account's decrypted credentials, its context and
its override, so every provider is driven by its integration file alone.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from core.settings import Settings
from platform_api.egress import BlockedAddressError, check_literal, host_allowed
from platform_api.integrations.catalog import AuthApply, IntegrationManifest, placeholders

# What a ``{field}`` of a base URL may hold when the integration file declares no pattern: one
# DNS label, so no value can add a host, a port, a path or a query.
DEFAULT_VALUE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,62}$"


class MissingValueError(ValueError):
    """A ``{placeholder}`` that neither the context, the credentials nor the settings fill."""


class UnsendableCredentialError(ValueError):
    """A credential holding a control character: no header or query value may carry one (CR
    or LF would split the request, NUL end it). The message names the credential."""


# RFC 9110 field values: no C0 control characters (tab aside, which no credential needs) or DEL.
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


def check_sendable(credentials: Mapping[str, Any]) -> None:
    """Raise UnsendableCredentialError naming the first credential no request can carry."""
    for name, value in credentials.items():
        if isinstance(value, str) and _CONTROL_CHARACTER.search(value):
            raise UnsendableCredentialError(name)


class UnsafeUpstreamError(ValueError):
    """A base URL (or a value filling one) that could aim provider calls at another host."""


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
    integration file's template is filled from the credentials, then the context (which never
    overrides a credential), then settings. Each filled value must match the integration file's
    pattern (UnsafeUpstreamError otherwise). Callers check the result with
    ``check_upstream_url`` before any call.
    """
    if override and isinstance(override.get("base_url"), str):
        return override["base_url"].rstrip("/")
    values = {**(context or {}), **credentials}
    for name in placeholders(manifest.base_url):
        if not name.startswith("settings.") and name in values:
            check_value(manifest, name, values[name])
    return render(manifest.base_url, values, settings).rstrip("/")


def check_value(manifest: IntegrationManifest, name: str, value: Any) -> None:
    """UnsafeUpstreamError unless ``value`` may fill ``{name}`` of the integration file's base
    URL."""
    pattern = manifest.base_url_patterns.get(name, DEFAULT_VALUE_PATTERN)
    if not isinstance(value, str | int) or not re.fullmatch(pattern, str(value)):
        raise UnsafeUpstreamError(f"{name}: must match {pattern}")


def check_values(manifest: IntegrationManifest, values: Mapping[str, Any]) -> None:
    """Check every value of ``values`` that fills a placeholder of the base URL."""
    for name in placeholders(manifest.base_url):
        if name in values and values[name] is not None:
            check_value(manifest, name, values[name])


def _host_matches(host: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        pattern = pattern.lower()
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


def check_upstream_url(
    manifest: IntegrationManifest, url: str, *, allowed_hosts: Iterable[str]
) -> str:
    """``url`` when provider calls may use it as a base URL; UnsafeUpstreamError otherwise.

    Allowed: https to one of the integration's hosts, or http(s) to a host on the outbound
    allow-list (``outbound_allowed_hosts``: the sandbox and local fakes)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError as exc:
        raise UnsafeUpstreamError("base_url: not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise UnsafeUpstreamError("base_url: must be an absolute http(s) URL")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UnsafeUpstreamError("base_url: must not contain credentials")
    if parts.query or parts.fragment:
        raise UnsafeUpstreamError("base_url: must not contain a query or fragment")
    if host_allowed(host, port, allowed_hosts):
        return url
    if parts.scheme != "https" or not _host_matches(host, manifest.upstream_hosts):
        hosts = ", ".join(manifest.upstream_hosts) or "none"
        raise UnsafeUpstreamError(f"base_url: host must be one of the integration's ({hosts})")
    try:
        check_literal(host, port, ())
    except BlockedAddressError as exc:
        raise UnsafeUpstreamError(f"base_url: {exc}") from exc
    return url


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
    OAuth (an ``access_token`` but not the integration file's own fields) use
    ``auth.oauth2.apply``.
    """
    check_sendable(credentials)
    auth = manifest.auth
    if _fills(auth.apply, credentials) and auth.apply.templates():
        return _apply(auth.apply, credentials)
    if auth.oauth2 is not None and _fills(auth.oauth2.apply, credentials):
        return _apply(auth.oauth2.apply, credentials)
    return _apply(auth.apply, credentials)  # raises MissingValueError naming the gap
