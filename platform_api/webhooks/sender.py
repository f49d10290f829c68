"""One HTTP attempt: POST the signed body, never follow redirects, classify the answer."""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from platform_api.webhooks.targets import BlockedTarget, resolve_target

USER_AGENT = "Switchyard-Webhooks/1.0"
ERROR_TEXT_LIMIT = 500
_BODY_PEEK = 300  # bytes of a failing answer kept in the delivery log


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    duration_ms: int
    error: str | None
    retry_after: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def make_client(timeout: float, max_connections: int) -> httpx.Client:
    """A pooled client: no redirects, no environment proxies, one timeout per operation."""
    return httpx.Client(
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=20),
        headers={"user-agent": USER_AGENT, "content-type": "application/json"},
    )


def _truncate(text: str) -> str:
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"


def post(
    client: httpx.Client,
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
        target = resolve_target(url, allowed_hosts)
        with client.stream(
            "POST",
            target.url,
            content=body,
            headers={**headers, **target.headers},
            extensions=dict(target.extensions),
        ) as response:
            status = response.status_code
            if 200 <= status < 300:
                return Outcome(status, elapsed(), None)
            peek = b""
            for chunk in response.iter_bytes():
                peek += chunk
                if len(peek) >= _BODY_PEEK:
                    break
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
