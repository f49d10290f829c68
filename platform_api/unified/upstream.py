"""Calls to providers: one pooled httpx client per event loop, bounded 429 retries, timeouts.

The client's transport is the outbound guard's (``platform_api.egress``): every connection
goes to checked public addresses, or to a host on ``outbound_allowed_hosts``. Answers are read
up to ``upstream_max_response_bytes``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json as jsonlib
import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import httpx
import structlog

from core.errors import ApiError
from core.settings import Settings
from platform_api.egress import BlockedAddressError, guarded_transport

log = structlog.get_logger(__name__)

# An AsyncClient belongs to the loop it first ran on; production has one loop per process,
# tests may have several, so keep one client per loop (and allow-list) rather than one global.
_CLIENTS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, ...], httpx.AsyncClient]
] = weakref.WeakKeyDictionary()


def get_client(settings: Settings) -> httpx.AsyncClient:
    """The process's pooled, guarded client for provider calls (created on first use).

    Every outbound provider call (unified, proxy, sync, OAuth token exchange, credential
    checks) must use this client: its transport is what enforces the outbound guard."""
    allowed = tuple(settings.resolved_outbound_allowed_hosts)
    clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    client = clients.get(allowed)
    if client is None or client.is_closed:
        limits = httpx.Limits(
            max_connections=settings.upstream_max_connections,
            max_keepalive_connections=settings.upstream_max_keepalive,
            keepalive_expiry=30,
        )
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(
                settings.upstream_timeout_s, connect=settings.upstream_connect_timeout_s
            ),
            transport=guarded_transport(allowed, limits=limits),
            follow_redirects=False,
            trust_env=False,
        )
        clients[allowed] = client
    return client


@dataclass
class UpstreamResponse:
    status: int
    headers: dict[str, str]
    body: Any
    duration_ms: float
    url: str
    attempts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


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
    client = get_client(settings)
    started = time.perf_counter()
    attempts = 0
    while True:
        attempts += 1
        try:
            request = client.build_request(
                method,
                url,
                params=_clean(params),
                headers=headers,
                json=json,
                data=data,  # a form body (OAuth token requests)
                # Per call, so a settings change (or a test) takes effect on the shared client.
                timeout=httpx.Timeout(
                    settings.upstream_timeout_s, connect=settings.upstream_connect_timeout_s
                ),
            )
            response = await client.send(request, stream=True)
            content = await _read_capped(response, settings.upstream_max_response_bytes)
        except BlockedAddressError as exc:
            log.warning("upstream_blocked", url=_without_query(url), reason=str(exc))
            raise ApiError(
                502,
                "UPSTREAM_BLOCKED",
                "the integration's address is not allowed (private, loopback or link-local)",
            ) from exc
        except httpx.InvalidURL as exc:
            raise ApiError(502, "UPSTREAM_ERROR", "the integration's URL is not valid") from exc
        except httpx.TimeoutException as exc:
            raise ApiError(
                504, "UPSTREAM_TIMEOUT", "the integration did not answer in time"
            ) from exc
        except httpx.HTTPError as exc:
            raise ApiError(
                502, "UPSTREAM_ERROR", f"could not reach the integration ({type(exc).__name__})"
            ) from exc
        if response.status_code != 429:
            break
        wait = parse_retry_after(
            response.headers.get(retry_after_header) or response.headers.get("Retry-After"),
            default=settings.upstream_retry_default_s,
        )
        if attempts > settings.upstream_max_retries or wait > settings.upstream_retry_max_sleep_s:
            raise ApiError(
                429,
                "RATE_LIMITED",
                "the integration is rate limiting this account; retry later",
                headers={"Retry-After": str(max(1, round(wait)))},
            )
        log.info("upstream_rate_limited", url=_without_query(url), wait_s=wait, attempt=attempts)
        await asyncio.sleep(wait)
    return UpstreamResponse(
        status=response.status_code,
        headers={k.lower(): v for k, v in response.headers.items()},
        body=_body(response, content),
        duration_ms=(time.perf_counter() - started) * 1000,
        url=str(response.url),
        attempts=attempts,
    )


def _clean(params: dict[str, Any] | None) -> dict[str, Any] | None:
    if not params:
        return None
    out: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        out[key] = value
    return out


def _without_query(url: str) -> str:
    # Query strings may carry credentials (Pipedrive's api_token): never logged.
    return url.split("?", 1)[0]


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    """The (decoded) body, refusing one larger than ``limit`` bytes without reading it all."""
    try:
        declared = int(response.headers.get("content-length") or 0)
        if declared > limit:
            raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
        return b"".join(chunks)
    except ValueError as exc:  # a malformed Content-Length
        raise ApiError(502, "UPSTREAM_ERROR", "the integration sent a malformed answer") from exc
    finally:
        await response.aclose()


def _too_large(limit: int) -> ApiError:
    return ApiError(502, "UPSTREAM_ERROR", f"the integration's answer is larger than {limit} bytes")


def _body(response: httpx.Response, content: bytes) -> Any:
    if not content:
        return None
    try:
        return jsonlib.loads(content)
    except RecursionError as exc:
        raise ApiError(
            502, "UPSTREAM_ERROR", "the integration's answer is nested too deeply"
        ) from exc
    except ValueError:
        return content.decode(response.encoding or "utf-8", "replace")
