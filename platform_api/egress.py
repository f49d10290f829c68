"""Where outbound HTTP may go: one guard for provider calls and webhook deliveries.

Every outbound connection is checked on the addresses the host resolves to, at connect time,
inside the HTTP client (an aiohttp resolver, for provider calls and webhooks alike), and the
connection is made to exactly the addresses that passed, so a DNS answer that changes between
a check and the connection (rebinding) cannot slip through. IP literals, which aiohttp
connects to without resolving, are checked before the call (``check_literal``).

Blocked: every address that is not globally routable (loopback, private, link-local, CGNAT,
unspecified, reserved), multicast, and the IPv6 forms that carry an IPv4 address (IPv4-mapped
``::ffff:0:0/96``, IPv4-compatible ``::/96``, NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``,
6to4 ``2002::/16``, Teredo). Numeric and shortened IPv4 spellings (``2130706433``,
``0x7f.1``, ``127.1``) resolve to the address they mean and are judged by it.

An allow-list (``host`` or ``host:port`` entries) exempts development hosts such as the
sandbox; it matches the host as written in the URL, never a resolved address.

An allow-only list (``SWITCHYARD_EGRESS_ALLOW_ONLY``, same entries) closes egress to the hosts
it lists: when set (even empty), an unlisted host is refused before anything is resolved or
dialled (``check_allow_only``), whatever the allow-lists say; a listed host is exempt from the
address rules, as an allow-listed one is. Unset, nothing changes.

A refusal's message names the host, never the address a name resolved to: it reaches API
clients (a webhook's delivery log), and the internal address is what an attacker probing with
DNS names wants to learn. The addresses are logged, and kept on the error for the caller.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

import structlog
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

log = structlog.get_logger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 ranges that embed (or translate to) an IPv4 address: blocked whole, whatever the
# embedded address, since the far side decides where they lead.
_IPV4_CARRYING = [
    ipaddress.ip_network(net)
    for net in (
        "::/96",  # IPv4-compatible (deprecated)
        "::ffff:0:0/96",  # IPv4-mapped
        "64:ff9b::/96",  # NAT64 well-known prefix
        "64:ff9b:1::/48",  # NAT64 local-use
        "2002::/16",  # 6to4
        "2001::/32",  # Teredo
    )
]


class BlockedAddressError(OSError):
    """The host resolves to (or is) an address outbound calls may not reach.

    The message is safe to show to API clients; ``addresses`` holds what the host resolved
    to (empty for a literal), for logs only."""

    def __init__(self, message: str, addresses: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.addresses = list(addresses)


class NotListedError(BlockedAddressError):
    """The host is not on the allow-only list (``SWITCHYARD_EGRESS_ALLOW_ONLY``)."""


ALLOW_ONLY_SETTING = "SWITCHYARD_EGRESS_ALLOW_ONLY"


def parse_address(host: str) -> IPAddress | None:
    """The IP address a host literal denotes, including the numeric and shortened IPv4
    forms the C resolver accepts (``2130706433``, ``0x7f.1``, ``127.1``, ``0177.0.0.1``);
    None for a name that needs DNS."""
    text = host.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except (OSError, ValueError):
        return None


def is_blocked_address(address: str | IPAddress) -> bool:
    """Whether outbound calls must not reach this address."""
    ip = parse_address(address) if isinstance(address, str) else address
    if ip is None:
        return True  # not an address at all: refuse rather than guess
    if isinstance(ip, ipaddress.IPv6Address) and (
        any(ip in net for net in _IPV4_CARRYING)
        # Deprecated site-local (fec0::/10): still routed inside some networks, yet
        # ipaddress counts it as global.
        or ip.is_site_local
    ):
        return True
    return (
        not ip.is_global
        or ip.is_multicast
        or ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_unspecified
    )


def host_allowed(host: str, port: int | None, allowed_hosts: Iterable[str]) -> bool:
    """Whether ``host`` (as written in the URL) is on the allow-list, as ``host`` or
    ``host:port`` (IPv6 as ``[::1]`` or ``[::1]:port``)."""
    name = host.strip().strip("[]").lower()
    spellings = {name, f"[{name}]"}
    if port is not None:
        spellings |= {f"{name}:{port}", f"[{name}]:{port}"}
    return any(entry.strip().lower() in spellings for entry in allowed_hosts)


def check_allow_only(host: str, port: int | None, allow_only: Iterable[str] | None) -> bool:
    """Refuse (NotListedError) a host missing from the allow-only list when one is set; True
    when the host is listed (exempt from the address rules), False when no list is set.

    ``port`` is the port the connection would use (the scheme's default when the URL names
    none), so ``hooks.internal:443`` matches ``https://hooks.internal/``."""
    if allow_only is None:
        return False
    if host_allowed(host, port, allow_only):
        return True
    log.warning("outbound_host_not_listed", host=host, port=port)
    raise NotListedError(f"{host} is not allowed: it is not listed in {ALLOW_ONLY_SETTING}")


def check_literal(
    host: str,
    port: int | None,
    allowed_hosts: Iterable[str],
    allow_only: Iterable[str] | None = None,
) -> None:
    """Refuse a host missing from the allow-only list (when set), or one that is itself a
    blocked address (or ``localhost``) and not listed; all without DNS."""
    if check_allow_only(host, port, allow_only) or host_allowed(host, port, allowed_hosts):
        return
    if host.strip().rstrip(".").lower() in ("localhost", "localhost.localdomain"):
        raise BlockedAddressError(f"{host} is a non-public address (a loopback name)")
    ip = parse_address(host)
    if ip is not None and is_blocked_address(ip):
        raise BlockedAddressError(f"{host} is a non-public address")


def check_resolved(host: str, addresses: Iterable[str]) -> list[str]:
    """The addresses when every one is public; BlockedAddressError otherwise (its message
    without the addresses, which are logged)."""
    found = list(dict.fromkeys(addresses))
    blocked = [a for a in found if is_blocked_address(a)]
    if blocked or not found:
        log.warning("outbound_host_blocked", host=host, addresses=blocked or "none")
        raise BlockedAddressError(
            f"{host} is not allowed: it resolves to a non-public address", blocked
        )
    return found


class GuardedResolver(AbstractResolver):
    """aiohttp's threaded resolver, then the guard: the connection is made to the addresses
    returned here, so the check and the connection see the same DNS answer. A host missing
    from ``allow_only`` (when set) is refused before it is resolved."""

    def __init__(
        self, allowed_hosts: Iterable[str], allow_only: Iterable[str] | None = None
    ) -> None:
        self._allowed = list(allowed_hosts)
        self._allow_only = None if allow_only is None else list(allow_only)
        self._inner: AbstractResolver = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        listed = check_allow_only(host, port, self._allow_only)
        results = await self._inner.resolve(host, port, family)
        if not listed and not host_allowed(host, port, self._allowed):
            check_resolved(host, (r["host"] for r in results))
        return results

    async def close(self) -> None:
        await self._inner.close()
