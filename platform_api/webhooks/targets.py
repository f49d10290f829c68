"""Where a webhook may point: URL rules at creation, address checks at every delivery.

A target must be an absolute https URL. Plain http, and addresses that are not publicly
routable (loopback, private, link-local, cloud metadata, CGNAT...), are allowed only for hosts
listed in ``webhook_allowed_hosts`` (local development and tests). The address check runs on
the resolved addresses at delivery time, and the request then goes to the checked address,
so a DNS answer cannot change between the check and the connection.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from platform_api.errors import invalid_request


class BlockedTarget(Exception):
    """The target resolves to an address webhooks may not reach."""


def _allowed(host: str, allowed_hosts: list[str]) -> bool:
    return host.lower() in {h.lower() for h in allowed_hosts}


def host_allowed(url: str, allowed_hosts: list[str]) -> bool:
    """Whether the URL's host is listed in ``webhook_allowed_hosts``."""
    return _allowed(urlsplit(url).hostname or "", allowed_hosts)


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def validate_target_url(url: str, allowed_hosts: list[str]) -> str:
    """The URL if it may be used as a webhook target; 400 ``INVALID_REQUEST`` otherwise."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise invalid_request("target_url: must be an absolute https URL")
    if parts.username or parts.password:
        raise invalid_request("target_url: must not contain credentials")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        raise invalid_request("target_url: invalid port") from exc
    allowed = _allowed(host, allowed_hosts)
    if parts.scheme == "http" and not allowed:
        raise invalid_request("target_url: must use https")
    if not allowed:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if (literal is not None and not _is_public(host)) or host.lower() == "localhost":
            raise invalid_request(
                "target_url: private, loopback and link-local hosts are not allowed"
            )
    return url.strip()


@dataclass(frozen=True)
class ResolvedTarget:
    """What to connect to: the URL (with a checked IP in place of the host) and extras."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, str] = field(default_factory=dict)


def resolve_target(url: str, allowed_hosts: list[str]) -> ResolvedTarget:
    """Resolve the host and pin the request to a public address; raise ``BlockedTarget``."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if _allowed(host, allowed_hosts):
        return ResolvedTarget(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise BlockedTarget(f"cannot resolve {host}: {exc.strerror}") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    blocked = [a for a in addresses if not _is_public(a)]
    if blocked or not addresses:
        raise BlockedTarget(f"{host} resolves to a non-public address ({', '.join(blocked)})")
    address = addresses[0]
    netloc_host = f"[{address}]" if ":" in address else address
    netloc = f"{netloc_host}:{parts.port}" if parts.port else netloc_host
    pinned = parts._replace(netloc=netloc).geturl()
    host_header = f"{host}:{parts.port}" if parts.port else host
    # TLS still verifies the certificate against the original name (SNI).
    return ResolvedTarget(pinned, {"host": host_header}, {"sni_hostname": host})
