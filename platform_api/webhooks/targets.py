"""Where a webhook may point: URL rules at creation, address checks at every delivery.

A target must be an absolute https URL. Plain http, and addresses that are not publicly
routable, are allowed only for hosts listed in ``webhook_allowed_hosts`` (local development
and tests). The address rules, and the check on the resolved addresses at every attempt
(inside the HTTP client's resolver), are the outbound guard's (``platform_api.egress``), the
same that provider calls go through. When ``SWITCHYARD_EGRESS_ALLOW_ONLY`` is set, a target
whose host it does not list is refused (400 at creation, "blocked" at delivery, before any
lookup), even one on ``webhook_allowed_hosts``; a listed host is exempt from the address rules
(plain http still needs ``webhook_allowed_hosts``).
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import urlsplit

from core.errors import invalid_request
from platform_api.egress import (
    BlockedAddressError,
    GuardedResolver,
    NotListedError,
    check_allow_only,
    host_allowed,
)
from platform_api.egress import check_literal as _check_host_literal

# Kept under the webhook name: the sender reports these as "blocked".
BlockedTarget = BlockedAddressError

__all__ = ["BlockedTarget", "GuardedResolver", "check_literal", "validate_target_url"]


_LABELS = re.compile(
    r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
)


def _is_hostname(host: str) -> bool:
    """A DNS name (internationalized ones in their IDNA form) or an IP literal."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return bool(_LABELS.match(ascii_host.lower()))


_DEFAULT_PORTS = {"https": 443, "http": 80}


def _connect_port(scheme: str, port: int | None) -> int | None:
    """The port a connection to the URL uses (what the resolver is asked with)."""
    return port if port is not None else _DEFAULT_PORTS.get(scheme)


def validate_target_url(
    url: str, allowed_hosts: list[str], allow_only: list[str] | None = None
) -> str:
    """The URL if it may be used as a webhook target; 400 ``INVALID_REQUEST`` otherwise."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not _is_hostname(host):
        raise invalid_request("target_url: must be an absolute https URL")
    if parts.username or parts.password:
        raise invalid_request("target_url: must not contain credentials")
    try:
        port = parts.port
    except ValueError as exc:
        raise invalid_request("target_url: invalid port") from exc
    try:
        listed = check_allow_only(host, _connect_port(parts.scheme, port), allow_only)
    except NotListedError as exc:
        raise invalid_request(f"target_url: {exc}") from exc
    allowed = host_allowed(host, port, allowed_hosts)
    if parts.scheme == "http" and not allowed:
        raise invalid_request("target_url: must use https")
    try:
        if not listed:
            _check_host_literal(host, port, allowed_hosts)
    except BlockedAddressError as exc:
        raise invalid_request(
            "target_url: private, loopback and link-local hosts are not allowed"
        ) from exc
    return url.strip()


def check_literal(url: str, allowed_hosts: list[str], allow_only: list[str] | None = None) -> None:
    """Refuse a target whose host the allow-only list (when set) does not name, or whose host
    is a non-public IP literal (no resolver is asked for those)."""
    only = None if allow_only is None else tuple(allow_only)
    refusal = _literal_refusal(url, tuple(allowed_hosts), only)
    if refusal is not None:
        raise BlockedTarget(refusal)


@lru_cache(maxsize=1024)
def _literal_refusal(
    url: str, allowed_hosts: tuple[str, ...], allow_only: tuple[str, ...] | None
) -> str | None:
    """Why ``url``'s host is refused before any lookup, or None; the same answer for every
    delivery to the URL, so worked out once (it was a twentieth of a worker's CPU per
    delivery)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    try:
        if not check_allow_only(host, _connect_port(parts.scheme, port), allow_only):
            _check_host_literal(host, port, list(allowed_hosts))
    except BlockedAddressError as exc:
        return str(exc)
    return None
