"""Calls to providers: one pooled httpx client per event loop, bounded 429 retries, timeouts."""

from __future__ import annotations

import asyncio
import email.utils
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import httpx
import structlog

from core.errors import ApiError
from core.settings import Settings

log = structlog.get_logger(__name__)

# An AsyncClient belongs to the loop it first ran on; production has one loop per process,
# tests may have several, so keep one client per loop rather than one global.
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def get_client(settings: Settings) -> httpx.AsyncClient:
    """The process's pooled client for provider calls (created on first use)."""
    loop = asyncio.get_running_loop()
    client = _CLIENTS.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(
                settings.upstream_timeout_s, connect=settings.upstream_connect_timeout_s
            ),
            limits=httpx.Limits(
                max_connections=settings.upstream_max_connections,
                max_keepalive_connections=settings.upstream_max_keepalive,
                keepalive_expiry=30,
            ),
            follow_redirects=False,
        )
        _CLIENTS[loop] = client
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
    """Seconds to wait from a Retry-After value (seconds or an HTTP date)."""
    if not value:
        return default
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_to_datetime(value) if value else None
    if parsed is None:
        return default
    return max(0.0, parsed.timestamp() - time.time())


async def send(
    settings: Settings,
    *,
    method: str,
    url: str,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    json: Any = None,
    retry_after_header: str = "Retry-After",
) -> UpstreamResponse:
    """One provider call; 429 answers are retried (bounded), then become 429 RATE_LIMITED."""
    client = get_client(settings)
    started = time.perf_counter()
    attempts = 0
    while True:
        attempts += 1
        try:
            response = await client.request(
                method,
                url,
                params=_clean(params),
                headers=headers,
                json=json,
                # Per call, so a settings change (or a test) takes effect on the shared client.
                timeout=httpx.Timeout(
                    settings.upstream_timeout_s, connect=settings.upstream_connect_timeout_s
                ),
            )
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
        log.info("upstream_rate_limited", url=url, wait_s=wait, attempt=attempts)
        await asyncio.sleep(wait)
    return UpstreamResponse(
        status=response.status_code,
        headers={k.lower(): v for k, v in response.headers.items()},
        body=_body(response),
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


def _body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text
