"""Where a webhook may point: URL rules at creation, address checks at every delivery.

A target must be an absolute https URL. Plain http, and addresses that are not publicly
routable (loopback, private, link-local, cloud metadata, CGNAT...), are allowed only for hosts
listed in ``webhook_allowed_hosts`` (local development and tests). The address check runs on
the resolved addresses at every attempt, inside the HTTP client's resolver, so the request
goes to exactly the addresses that were checked.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from core.errors import invalid_request


class BlockedTarget(OSError):
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


def check_literal(url: str, allowed_hosts: list[str]) -> None:
    """Refuse a target whose host is a non-public IP literal (no resolver is asked for those)."""
    host = urlsplit(url).hostname or ""
    if _allowed(host, allowed_hosts):
        return
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return
    if not _is_public(host):
        raise BlockedTarget(f"{host} is a non-public address")


class GuardedResolver(AbstractResolver):
    """Resolves like the default resolver, then refuses hosts with non-public addresses.

    The connection is made to the addresses returned here, so the check and the connection
    see the same DNS answer (no rebinding in between)."""

    def __init__(self, allowed_hosts: list[str]) -> None:
        self._allowed = allowed_hosts
        self._inner = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if _allowed(host, self._allowed):
            return results
        blocked = sorted({r["host"] for r in results if not _is_public(r["host"])})
        if blocked or not results:
            raise BlockedTarget(f"{host} resolves to a non-public address ({', '.join(blocked)})")
        return results

    async def close(self) -> None:
        await self._inner.close()
