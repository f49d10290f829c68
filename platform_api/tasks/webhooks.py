"""The webhook delivery task: claim, send (concurrently), record. Arguments are delivery ids."""

from __future__ import annotations

import asyncio

import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import configure_mappers

from core.settings import Settings, get_settings
from platform_api.db import get_engine, session_scope
from platform_api.tables.common import utcnow
from platform_api.webhooks.attempts import Work, claim, record
from platform_api.webhooks.sender import Outcome, make_session, post, tls_context
from platform_api.webhooks.signing import signed_headers

log = structlog.get_logger(__name__)


def preload() -> None:
    """Do once, before the worker forks (see ``switchyard worker``), what every work horse
    would otherwise redo per job: configure the ORM mappers, build the TLS context, load
    aiohttp's lazily imported modules, and compile the claim's SQL into the engine's cache."""
    configure_mappers()
    tls_context()

    async def _open_and_close() -> None:
        async with make_session(1.0, 1, []):
            pass

    asyncio.run(_open_and_close())
    settings = get_settings()
    try:
        with session_scope(settings) as session:
            claim(session, ["-"], settings, utcnow())  # matches nothing
    except SQLAlchemyError as exc:  # best effort: the worker starts even if the DB is down
        log.warning("webhook_preload_skipped", error=str(exc))
    finally:
        # No pooled connection may cross the fork; work horses open their own.
        get_engine(settings).dispose()


async def _send_all(work: list[Work], settings: Settings) -> list[Outcome]:
    limit = asyncio.Semaphore(settings.webhook_send_concurrency)
    session = make_session(
        settings.webhook_timeout_seconds,
        settings.webhook_send_concurrency,
        settings.webhook_allowed_hosts,
    )
    async with session:

        async def send(item: Work) -> Outcome:
            async with limit:
                # Signed at send time: a fresh timestamp on every attempt, the same id.
                headers = signed_headers(item.secret, item.event_id, item.body)
                return await post(
                    session,
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
