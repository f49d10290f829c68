"""Calls to providers: one pooled aiohttp session per event loop, bounded 429 retries, timeouts.

aiohttp rather than httpx: on a unified call it costs about a third of httpx's CPU per
provider request (measured in the front: ~0.4 against ~1.2 ms), and the provider call is on
every unified and proxy request. The session's resolver is the outbound guard's
(``platform_api.egress``): every connection goes to checked public addresses, or to a host on
``outbound_allowed_hosts``; IP literals, which aiohttp connects to without resolving, are
checked before each call. With ``SWITCHYARD_EGRESS_ALLOW_ONLY`` set, a host it does not list is
refused (502 ``UPSTREAM_BLOCKED``) before it is resolved. Answers are read up to
``upstream_max_response_bytes``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json as jsonlib
import math
import ssl
import time
import weakref
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, partial
from typing import Any

import aiohttp
import certifi
import structlog
from multidict import CIMultiDictProxy
from yarl import URL

from core.errors import ApiError
from core.settings import Settings
from platform_api.egress import (
    BlockedAddressError,
    GuardedResolver,
    NotListedError,
    check_literal,
)

log = structlog.get_logger(__name__)

_READ_CHUNK = 64 * 1024
_compact_json = partial(jsonlib.dumps, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

# A session belongs to the loop it first ran on; production has one loop per process, tests
# may have several, so keep one session per loop (and guard lists) rather than one global.
_GuardKey = tuple[tuple[str, ...], tuple[str, ...] | None]
_SESSIONS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[_GuardKey, aiohttp.ClientSession]
] = weakref.WeakKeyDictionary()


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    # Loading the roots takes milliseconds: once per process.
    return ssl.create_default_context(cafile=certifi.where())


def get_session(settings: Settings) -> aiohttp.ClientSession:
    """The process's pooled, guarded session for provider calls (created on first use).

    Every outbound provider call (unified, proxy, sync, OAuth token exchange, credential
    checks) goes through ``send``: its resolver and literal check are the outbound guard."""
    allowed = tuple(settings.resolved_outbound_allowed_hosts)
    only = settings.egress_allow_only
    # A session per guard: a pooled connection (or cached DNS answer) never outlives the
    # lists it was checked against.
    key: _GuardKey = (allowed, None if only is None else tuple(only))
    sessions = _SESSIONS.setdefault(asyncio.get_running_loop(), {})
    session = sessions.get(key)
    if session is None or session.closed:
        connector = aiohttp.TCPConnector(
            limit=settings.upstream_max_connections,
            keepalive_timeout=30,
            ssl=_tls_context(),
            resolver=GuardedResolver(allowed, only),
        )
        session = aiohttp.ClientSession(
            connector=connector,
            json_serialize=_compact_json,
            trust_env=False,
            # No default User-Agent beyond aiohttp's, no cookies kept between accounts.
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        sessions[key] = session
    return session


async def close_sessions() -> None:
    """Close the running loop's provider sessions (before the loop ends: a process's
    shutdown, the end of a sync run's ``asyncio.run``)."""
    for session in _SESSIONS.pop(asyncio.get_running_loop(), {}).values():
        await session.close()


@dataclass
class UpstreamResponse:
    """A provider's answer. ``body`` is the parsed JSON (or the text when it is not JSON),
    parsed on first use: a list page mapped by the Rust engine reads ``text`` instead."""

    status: int
    headers: dict[str, str]
    content: bytes
    duration_ms: float
    url: str
    attempts: int = 1
    encoding: str = "utf-8"
    extra: dict[str, Any] = field(default_factory=dict)
    # ``{"body": …, "headers": …}`` parsed by the Rust engine, when a page was mapped there.
    document: Any = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @cached_property
    def body(self) -> Any:
        return _body(self.content, self.encoding)

    @cached_property
    def text(self) -> str:
        return _decode(self.content, self.encoding)

    def document_text(self) -> str:
        """The answer as the JSON document paging expressions read (``body``, ``headers``);
        not valid JSON when the body is not."""
        return f'{{"body":{self.text or "null"},"headers":{jsonlib.dumps(self.headers)}}}'

    def graphql_errors(self) -> bool:
        """A GraphQL answer (200 with ``data``) that reports ``errors``: a failure too."""
        if b'"errors"' not in self.content:  # most answers: no parsing needed to tell
            return False
        body = self.body
        return isinstance(body, dict) and bool(body.get("errors")) and "data" in body


# The longest Retry-After passed on to a caller: a provider's "come back in 30 years" is
# passed on as a day (then the caller asks again and is told again).
MAX_RETRY_AFTER_S = 86_400


def parse_retry_after(value: str | None, default: float) -> float:
    """Seconds to wait from a Retry-After value (seconds or an HTTP date); anything else
    (``inf``, ``nan``, garbage, an impossible date) means ``default``."""
    if not value or len(value) > 64:
        return default
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, OverflowError, IndexError):
            return default
        if parsed is None or parsed.tzinfo is None:
            return default
        seconds = parsed.timestamp() - time.time()
    if not math.isfinite(seconds):
        return default
    return max(0.0, seconds)


async def send(
    settings: Settings,
    *,
    method: str,
    url: str,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    json: Any = None,
    data: dict[str, str] | None = None,
    retry_after_header: str = "Retry-After",
) -> UpstreamResponse:
    """One provider call; 429 answers are retried (bounded), then become 429 RATE_LIMITED."""
    session = get_session(settings)
    allowed = settings.resolved_outbound_allowed_hosts
    # Per call, so a settings change (or a test) takes effect on the shared session: the
    # connect timeout bounds reaching the provider, the read timeout each wait for data.
    timeout = aiohttp.ClientTimeout(
        total=None,
        connect=settings.upstream_timeout_s,  # a free pooled connection, then connecting
        sock_connect=settings.upstream_connect_timeout_s,
        sock_read=settings.upstream_timeout_s,
    )
    # Paths arrive percent-encoded (placeholders and proxy paths are quoted when rendered):
    # sent as they are, not quoted again.
    try:
        target = URL(url, encoded=True)
    except ValueError as exc:
        raise _invalid_url() from exc
    if not target.is_absolute() or not target.host:
        raise _invalid_url()
    started = time.perf_counter()
    attempts = 0
    while True:
        attempts += 1
        try:
            check_literal(target.host, target.port, allowed, settings.egress_allow_only)
            async with session.request(
                method,
                target,
                params=_clean(params),
                headers=headers,
                json=json if data is None else None,
                data=data,  # a form body (OAuth token requests)
                allow_redirects=False,
                timeout=timeout,
            ) as response:
                content = await _read_capped(response, settings.upstream_max_response_bytes)
                status = response.status
                response_headers = _lower(response.headers)
                encoding = response.charset or "utf-8"
                final_url = str(response.url)
        except BlockedAddressError as exc:
            raise _blocked(url, exc) from exc
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, BlockedAddressError):
                raise _blocked(url, exc.os_error) from exc
            raise ApiError(
                502, "UPSTREAM_ERROR", "could not reach the integration (ConnectError)"
            ) from exc
        except aiohttp.InvalidURL as exc:
            raise _invalid_url() from exc
        except TimeoutError as exc:
            raise ApiError(
                504, "UPSTREAM_TIMEOUT", "the integration did not answer in time"
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise ApiError(
                502, "UPSTREAM_ERROR", f"could not reach the integration ({type(exc).__name__})"
            ) from exc
        if status != 429:
            break
        wait = parse_retry_after(
            response_headers.get(retry_after_header.lower()) or response_headers.get("retry-after"),
            default=settings.upstream_retry_default_s,
        )
        if attempts > settings.upstream_max_retries or wait > settings.upstream_retry_max_sleep_s:
            raise ApiError(
                429,
                "RATE_LIMITED",
                "the integration is rate limiting this account; retry later",
                headers={"Retry-After": str(max(1, round(min(wait, MAX_RETRY_AFTER_S))))},
            )
        log.info("upstream_rate_limited", url=_without_query(url), wait_s=wait, attempt=attempts)
        await asyncio.sleep(wait)
    return UpstreamResponse(
        status=status,
        headers=response_headers,
        content=content,
        encoding=encoding,
        duration_ms=(time.perf_counter() - started) * 1000,
        url=final_url,
        attempts=attempts,
    )


def _invalid_url() -> ApiError:
    return ApiError(502, "UPSTREAM_ERROR", "the integration's URL is not valid")


def _blocked(url: str, exc: BlockedAddressError) -> ApiError:
    log.warning("upstream_blocked", url=_without_query(url), reason=str(exc))
    if isinstance(exc, NotListedError):  # names the host as written and the setting only
        return ApiError(502, "UPSTREAM_BLOCKED", f"the integration's address is refused: {exc}")
    return ApiError(
        502,
        "UPSTREAM_BLOCKED",
        "the integration's address is not allowed (private, loopback or link-local)",
    )


def _lower(headers: CIMultiDictProxy[str]) -> dict[str, str]:
    """Header names in lower case; a repeated header's values joined with ", " (RFC 9110)."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def _clean(params: dict[str, Any] | None) -> list[tuple[str, str]] | None:
    """Query parameters as pairs: None left out, booleans as true/false, a list repeated."""
    if not params:
        return None
    out: list[tuple[str, str]] = []
    for key, value in params.items():
        for item in value if isinstance(value, list | tuple) else [value]:
            if item is None:
                continue
            if isinstance(item, bool):
                item = "true" if item else "false"
            out.append((str(key), str(item)))
    return out


def _without_query(url: str) -> str:
    # Query strings may carry credentials (Pipedrive's api_token): never logged.
    return url.split("?", 1)[0]


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The (decoded) body, refusing one larger than ``limit`` bytes without reading it all."""
    declared = response.headers.get("content-length")
    try:
        if declared is not None and int(declared) > limit:
            raise _too_large(limit)
    except ValueError as exc:  # a malformed Content-Length
        raise ApiError(502, "UPSTREAM_ERROR", "the integration sent a malformed answer") from exc
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> ApiError:
    return ApiError(502, "UPSTREAM_ERROR", f"the integration's answer is larger than {limit} bytes")


def _body(content: bytes, encoding: str) -> Any:
    if not content:
        return None
    try:
        return jsonlib.loads(content)
    except RecursionError as exc:
        raise ApiError(
            502, "UPSTREAM_ERROR", "the integration's answer is nested too deeply"
        ) from exc
    except ValueError:
        return _decode(content, encoding)


def _decode(content: bytes, encoding: str) -> str:
    try:
        return content.decode(encoding, "replace")
    except LookupError:  # a charset Python does not know
        return content.decode("utf-8", "replace")
