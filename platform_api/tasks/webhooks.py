"""The webhook delivery task: claim, send (concurrently, on the process's send loop), record.
Arguments are delivery ids. ``python -m platform_api.tasks.webhooks`` serves the webhooks
queue (see ``platform_api.webhooks.worker``)."""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Sequence

import structlog
from rq.serializers import JSONSerializer
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import configure_mappers

from core.settings import Settings, get_settings
from platform_api.db import get_engine, session_scope
from platform_api.queueing.queues import WEBHOOKS, get_queue, get_redis
from platform_api.tables.common import utcnow
from platform_api.webhooks.attempts import Work, claim, record
from platform_api.webhooks.send_loop import SendLoop, send_loop
from platform_api.webhooks.sender import Outcome, make_session, post, tls_context
from platform_api.webhooks.signing import signed_headers
from platform_api.webhooks.worker import worker_class

log = structlog.get_logger(__name__)


def preload() -> None:
    """Do once, when the worker starts (before it forks, for RQ's forking worker), what the
    first job (every work horse) would otherwise do: configure the ORM mappers, build the TLS
    context, load aiohttp's lazily imported modules, and compile the claim's SQL into the
    engine's cache."""
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


async def _send_all(work: list[Work], settings: Settings, sender: SendLoop) -> list[Outcome]:
    limit = asyncio.Semaphore(settings.webhook_send_concurrency)
    session = await sender.session(settings)

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
                allow_only=settings.egress_allow_only,
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
    sender = send_loop()
    outcomes = sender.run(_send_all(work, settings, sender))
    with session_scope(settings) as session:
        return record(session, list(zip(work, outcomes, strict=True)), settings, utcnow())


def serve(argv: Sequence[str] | None = None) -> None:
    """Serve the webhooks queue with its worker class (``worker_class``), as ``switchyard
    worker --queues webhooks`` does once it picks its class with it."""
    from core.log_config import configure_logging

    parser = argparse.ArgumentParser(description="Serve the webhooks queue.")
    parser.add_argument("--burst", action="store_true", help="Exit once the queue is empty.")
    args = parser.parse_args(argv)
    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    preload()
    gc.freeze()  # what is loaded by now lives as long as the worker: out of the collector's way
    connection = get_redis(settings)
    queues = [get_queue(WEBHOOKS, connection)]
    worker = worker_class([WEBHOOKS])(queues, connection=connection, serializer=JSONSerializer)
    # RQ logs two lines per job at INFO; the service's level decides, as for every other log.
    worker.work(burst=args.burst, with_scheduler=True, logging_level=settings.log_level)


if __name__ == "__main__":
    serve()
