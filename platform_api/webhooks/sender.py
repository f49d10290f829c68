"""One HTTP attempt: POST the signed body, never follow redirects, classify the answer."""

from __future__ import annotations

import asyncio
import importlib.util
import ssl
import sys
import time
from dataclasses import dataclass
from functools import lru_cache

import certifi
import httpx

from platform_api.webhooks.targets import (
    BlockedTarget,
    ResolvedTarget,
    host_allowed,
    resolve_target,
)

# httpcore tries `import sniffio` on every async request; when it is not installed each try
# searches sys.path again (a large share of a delivery's CPU). Recording the absence once
# makes the import fail at once; nothing else changes.
if importlib.util.find_spec("sniffio") is None:
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

USER_AGENT = "Switchyard-Webhooks/1.0"
ERROR_TEXT_LIMIT = 500
_BODY_PEEK = 300  # bytes of a failing answer kept in the delivery log
_BODY_LIMIT = 64 * 1024  # most of an answer's body ever read


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    duration_ms: int
    error: str | None
    retry_after: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """Certificate verification against certifi's roots; built once (loading is slow), and
    before the worker forks when the job module is preloaded."""
    return ssl.create_default_context(cafile=certifi.where())


def make_client(timeout: float, max_connections: int) -> httpx.AsyncClient:
    """A pooled client: no redirects, no environment proxies, one timeout per operation."""
    return httpx.AsyncClient(
        verify=tls_context(),
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=20),
        headers={"user-agent": USER_AGENT, "content-type": "application/json"},
    )


def _truncate(text: str) -> str:
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"


async def post(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    allowed_hosts: list[str],
    timeout: float,
) -> Outcome:
    """Make one attempt and describe what happened (this never raises)."""
    started = time.perf_counter()

    def elapsed() -> int:
        return int((time.perf_counter() - started) * 1000)

    try:
        if host_allowed(url, allowed_hosts):
            target = ResolvedTarget(url)
        else:  # resolving blocks: off the event loop
            target = await asyncio.to_thread(resolve_target, url, allowed_hosts)
        async with client.stream(
            "POST",
            target.url,
            content=body,
            headers={**headers, **target.headers},
            extensions=dict(target.extensions),
        ) as response:
            status = response.status_code
            # Reading a short answer to its end lets the connection be reused; a long one
            # is cut off (and its connection closed) rather than downloaded.
            peek = b""
            async for chunk in response.aiter_bytes():
                peek += chunk
                if len(peek) > _BODY_LIMIT:
                    break
            if 200 <= status < 300:
                return Outcome(status, elapsed(), None)
            text = peek[:_BODY_PEEK].decode("utf-8", "replace").strip()
            if 300 <= status < 400:
                where = response.headers.get("location", "?")
                error = f"HTTP {status}: redirect to {where} not followed"
            else:
                error = f"HTTP {status}" + (f": {text}" if text else "")
            return Outcome(status, elapsed(), _truncate(error), response.headers.get("retry-after"))
    except BlockedTarget as exc:
        return Outcome(None, elapsed(), _truncate(f"blocked: {exc}"))
    except httpx.TimeoutException:
        return Outcome(None, elapsed(), f"timed out (no answer within {timeout:g} s)")
    except httpx.HTTPError as exc:
        return Outcome(None, elapsed(), _truncate(f"{type(exc).__name__}: {exc}"))
