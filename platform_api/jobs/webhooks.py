"""The webhook delivery job: claim, send (concurrently), record. Arguments are delivery ids."""

from __future__ import annotations

import asyncio

from platform_api.db import session_scope
from platform_api.models.common import utcnow
from platform_api.settings import Settings, get_settings
from platform_api.webhooks.attempts import Work, claim, record
from platform_api.webhooks.sender import Outcome, make_client, post, tls_context
from platform_api.webhooks.signing import signed_headers


def preload() -> None:
    """Build what every delivery needs before the worker forks (see ``switchyard worker``):
    the TLS context, and the modules httpx and asyncio load on first use."""
    tls_context()

    async def _open_and_close() -> None:
        async with make_client(1.0, 1):
            pass

    asyncio.run(_open_and_close())


async def _send_all(work: list[Work], settings: Settings) -> list[Outcome]:
    limit = asyncio.Semaphore(settings.webhook_send_concurrency)
    async with make_client(
        settings.webhook_timeout_seconds, settings.webhook_send_concurrency
    ) as client:

        async def send(item: Work) -> Outcome:
            async with limit:
                # Signed at send time: a fresh timestamp on every attempt, the same id.
                headers = signed_headers(item.secret, item.event_id, item.body)
                return await post(
                    client,
                    item.url,
                    item.body,
                    headers,
                    allowed_hosts=settings.webhook_allowed_hosts,
                    timeout=settings.webhook_timeout_seconds,
                )

        return list(await asyncio.gather(*(send(item) for item in work)))


def deliver(delivery_ids: list[str]) -> dict[str, int]:
    """Make one attempt at each due delivery in ``delivery_ids``; returns counts by outcome."""
    settings = get_settings()
    with session_scope(settings) as session:
        work = claim(session, delivery_ids, settings, utcnow())
    if not work:
        return {"succeeded": 0, "retrying": 0, "failed": 0}
    outcomes = asyncio.run(_send_all(work, settings))
    with session_scope(settings) as session:
        return record(session, list(zip(work, outcomes, strict=True)), settings, utcnow())
