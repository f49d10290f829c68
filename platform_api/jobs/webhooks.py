"""The webhook delivery job: claim, send (concurrently), record. Arguments are delivery ids."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import httpx

from platform_api.db import session_scope
from platform_api.models.common import utcnow
from platform_api.settings import Settings, get_settings
from platform_api.webhooks.attempts import Work, claim, record
from platform_api.webhooks.sender import Outcome, make_client, post
from platform_api.webhooks.signing import signed_headers


@lru_cache(maxsize=4)
def _client(timeout: float, concurrency: int) -> httpx.Client:
    return make_client(timeout, concurrency)


def _send(work: Work, settings: Settings) -> Outcome:
    client = _client(settings.webhook_timeout_seconds, settings.webhook_send_concurrency)
    # Signed at send time: the timestamp is fresh on every attempt, the id never changes.
    headers = signed_headers(work.secret, work.event_id, work.body)
    return post(
        client,
        work.url,
        work.body,
        headers,
        allowed_hosts=settings.webhook_allowed_hosts,
        timeout=settings.webhook_timeout_seconds,
    )


def deliver(delivery_ids: list[str]) -> dict[str, int]:
    """Make one attempt at each due delivery in ``delivery_ids``; returns counts by outcome."""
    settings = get_settings()
    with session_scope(settings) as session:
        work = claim(session, delivery_ids, settings, utcnow())
    if not work:
        return {"succeeded": 0, "retrying": 0, "failed": 0}
    if len(work) == 1:
        outcomes = [_send(work[0], settings)]
    else:
        workers = min(settings.webhook_send_concurrency, len(work))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(lambda w: _send(w, settings), work))
    with session_scope(settings) as session:
        return record(session, list(zip(work, outcomes, strict=True)), settings, utcnow())
