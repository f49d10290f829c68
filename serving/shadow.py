"""Shadow traffic: a sampled copy of live traffic goes to a candidate model, never to clients.

``switchyard model shadow VERSION`` (``serving/cli/shadow.py``) deploys the candidate as a
second Serve application and, once it answers, writes one small JSON record to Redis
(``RECORD_KEY``: application, version, sample rate, an id). Every front polls that key every
``poll_s`` seconds, so fronts start and stop copying without a restart. Redis rather than
polling Serve's status, because:

- the record carries what Serve does not know: the sample rate chosen for this shadow and
  the id its counts are kept under;
- a GET is a fraction of a millisecond on the front's loop and needs no Ray connection, where
  a Serve status query is a round trip to the controller through Ray from every front;
- the fronts' counts add up in one Redis hash per shadow (``counts_key_for``), so
  ``--report`` sees every front process (workers, hosts); a front's ``/metrics`` shows only
  its own process.

In the front, ``ShadowTraffic.offer`` runs after the primary call has answered its requests:
it samples messages (``sample_rate``), remembers the served top intent of each and hands them
to one background sender per front, which sends them to the shadow in calls of up to
``max_batch`` messages (one call under way, ``wait_s`` to gather more), compares top intents
and counts. Nothing on the request path awaits it. At most ``max_pending`` copies wait or are
under way; samples past that are dropped and counted, and shadow failures are counted and
logged, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from core.settings import Settings
from serving.inference_metrics import (
    SHADOW_AGREEMENTS,
    SHADOW_COMPARED,
    SHADOW_DISAGREEMENTS,
    SHADOW_DROPPED,
    SHADOW_ERRORS,
)
from serving.protocol import DEPLOYMENT_NAME, BatchResult, TextPair

log = logging.getLogger(__name__)

RECORD_KEY = "switchyard:shadow"
# Each front writes its running totals under FRONT/NAME fields: rewriting a total is idempotent,
# so a write that timed out after Redis applied it cannot count twice (increments could).
FRONT_SEPARATOR = "/"
KEPT_RECORDS = 16  # totals of earlier shadows a front keeps (they may still be unsaved)
COUNTS_TTL_S = 30 * 24 * 3600
# Fields of the counts hash; a disagreement is "pair:<served intent>|<shadow intent>".
COMPARED, AGREEMENTS, DROPPED, ERRORS, PAIR = "compared", "agreements", "dropped", "errors", "pair:"


@dataclass(frozen=True)
class ShadowRecord:
    """What fronts read from Redis: where the shadow is and how much traffic to copy."""

    app: str
    version: str
    sample_rate: float | None = None  # None: each front's inference_shadow_sample_rate
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started_at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str | bytes) -> ShadowRecord:
        return cls(**json.loads(raw))

    @property
    def counts_key(self) -> str:
        """The Redis hash the fronts add this shadow's counts to."""
        return counts_key_for(self.id)


def counts_key_for(record_id: str) -> str:
    return f"{RECORD_KEY}:counts:{record_id}"


@dataclass(frozen=True)
class ShadowCounts:
    """A shadow's counts, every front added up (the Redis hash), for ``--report``."""

    compared: int = 0
    agreements: int = 0
    dropped: int = 0
    errors: int = 0
    disagreements: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def from_hash(cls, values: Mapping[bytes | str, bytes | str]) -> ShadowCounts:
        """Add up the hash's fields: ``FRONT/NAME`` (each front's totals) or ``NAME``."""
        counts: Counter[str] = Counter()
        pairs: Counter[tuple[str, str]] = Counter()
        for raw_key, raw_value in values.items():
            key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
            key = key.split(FRONT_SEPARATOR, 1)[-1]
            value = int(raw_value)
            if key.startswith(PAIR):
                served, shadow = key.removeprefix(PAIR).split("|", 1)
                pairs[(served, shadow)] += value
            else:
                counts[key] += value
        return cls(
            compared=counts.get(COMPARED, 0),
            agreements=counts.get(AGREEMENTS, 0),
            dropped=counts.get(DROPPED, 0),
            errors=counts.get(ERRORS, 0),
            disagreements=dict(pairs),
        )

    @property
    def agreement_rate(self) -> float | None:
        return self.agreements / self.compared if self.compared else None

    def report(self, record: ShadowRecord) -> str:
        """The lines ``switchyard model shadow --report`` prints."""
        rate = self.agreement_rate
        sampling = "front default" if record.sample_rate is None else f"{record.sample_rate:g}"
        lines = [
            f"shadow {record.version} (application {record.app}, sample rate {sampling})",
            f"compared {self.compared}  agreements {self.agreements}  "
            f"agreement {'n/a' if rate is None else f'{100 * rate:.1f}%'}",
            f"dropped {self.dropped}  errors {self.errors}",
        ]
        if self.disagreements:
            lines.append("disagreements (served -> shadow: messages):")
            ranked = sorted(self.disagreements.items(), key=lambda item: (-item[1], item[0]))
            lines += [f"  {served} -> {shadow}: {count}" for (served, shadow), count in ranked]
        else:
            lines.append("disagreements: none")
        return "\n".join(lines)


# -- the record, for the CLI (synchronous redis client) ------------------------------------


def write_record(client: Any, record: ShadowRecord) -> None:
    client.set(RECORD_KEY, record.to_json())


def read_record(client: Any) -> ShadowRecord | None:
    raw = client.get(RECORD_KEY)
    return ShadowRecord.from_json(raw) if raw else None


def delete_record(client: Any) -> None:
    client.delete(RECORD_KEY)


def read_counts(client: Any, record: ShadowRecord) -> ShadowCounts:
    return ShadowCounts.from_hash(client.hgetall(record.counts_key))


# -- the front -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ShadowOptions:
    """How a front copies traffic to a shadow (settings build it)."""

    redis_url: str | None  # None: no record is read (only ``set_record`` turns shadowing on)
    sample_rate: float = 0.10  # used when the record names none
    max_pending: int = 256  # copies waiting or under way; samples past it are dropped
    max_batch: int = 64  # messages per shadow call
    wait_s: float = 0.1  # gathering before a call: bounds the calls per second a front makes
    timeout_s: float = 30.0
    poll_s: float = 2.0  # how often the record is read and the counts added to Redis
    redis_timeout_s: float = 0.5
    seed: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings, *, redis_url: str | None) -> ShadowOptions:
        return cls(
            redis_url=redis_url,
            sample_rate=settings.inference_shadow_sample_rate,
            max_batch=settings.inference_batch_max_messages,
            timeout_s=settings.inference_timeout_s,
            redis_timeout_s=settings.redis_timeout_s,
        )


def _serve_handle(app_name: str) -> Any:
    from ray import serve

    # As the primary's handle (serving/client.py): made on the loop's thread, gRPC transport.
    return serve.get_deployment_handle(DEPLOYMENT_NAME, app_name=app_name).options(
        _by_reference=False
    )


def _top_intents(probabilities: np.ndarray, labels: Sequence[str]) -> list[str]:
    return [labels[i] for i in np.argmax(probabilities, axis=1)]


class ShadowTraffic:
    """One front's copies to the shadow: sampling, the bounded sender, comparison, counts."""

    def __init__(
        self, options: ShadowOptions, *, handle_for: Callable[[str], Any] | None = None
    ) -> None:
        """``handle_for(app)`` gives the shadow's deployment handle (tests pass a stand-in)."""
        self._options = options
        self._handle_for = handle_for or _serve_handle
        self._handles: dict[str, Any] = {}
        self._rng = random.Random(options.seed)
        self._record: ShadowRecord | None = None
        self._buffer: list[tuple[TextPair, str]] = []  # (message, served top intent)
        self._pending = 0  # buffered + in the call under way
        self._sender: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._redis: Any = None
        self._front = uuid.uuid4().hex[:12]
        self._totals: dict[str, Counter[str]] = {}  # record id -> this front's counts
        self._unsaved: set[str] = set()  # record ids whose totals Redis has not seen
        self._sync_lock = asyncio.Lock()
        self._failing = False
        self._redis_failing = False

    @property
    def record(self) -> ShadowRecord | None:
        """The shadow this front copies to (None: shadowing is off)."""
        return self._record

    @property
    def pending(self) -> int:
        """Copies waiting for, or in, a shadow call."""
        return self._pending

    def set_record(self, record: ShadowRecord | None) -> None:
        """Copy to ``record``'s shadow from now on (None: stop); unsent copies of another are
        discarded."""
        if record == self._record:
            return
        if record is None or self._record is None or record.id != self._record.id:
            self._pending -= len(self._buffer)
            self._buffer.clear()
        if record is not None:
            log.info("shadow traffic on: %s (%s)", record.version, record.app)
        elif self._record is not None:
            log.info("shadow traffic off")
        self._record = record

    # -- sampling (the request path: synchronous and cheap) --------------------------------

    def offer(self, pairs: Sequence[TextPair], result: BatchResult) -> None:
        """Sample messages the primary has just answered; queue copies for the shadow."""
        self._bind_loop()
        record = self._record
        if record is None:
            return
        rate = self._options.sample_rate if record.sample_rate is None else record.sample_rate
        if rate <= 0:
            return
        random_ = self._rng.random
        picked = [i for i in range(len(pairs)) if random_() < rate]
        if not picked:
            return
        room = max(0, self._options.max_pending - self._pending)
        if len(picked) > room:
            dropped = len(picked) - room
            SHADOW_DROPPED.labels(record.version).inc(dropped)
            self._counts(record)[DROPPED] += dropped
            picked = picked[:room]
            if not picked:
                return
        served = _top_intents(result.probabilities[picked], result.labels)
        self._buffer.extend((pairs[i], intent) for i, intent in zip(picked, served, strict=True))
        self._pending += len(picked)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send())

    def _counts(self, record: ShadowRecord) -> Counter[str]:
        """This front's totals for ``record``, marked for the next write to Redis."""
        totals = self._totals.get(record.id)
        if totals is None:
            totals = self._totals[record.id] = Counter()
            saved = [rid for rid in self._totals if rid not in self._unsaved and rid != record.id]
            for old in saved[: max(0, len(self._totals) - KEPT_RECORDS)]:
                del self._totals[old]
        self._unsaved.add(record.id)
        return totals

    # -- the sender ------------------------------------------------------------------------

    async def _send(self) -> None:
        while self._buffer:
            if len(self._buffer) < self._options.max_batch:
                await asyncio.sleep(self._options.wait_s)
            record = self._record
            if record is None or not self._buffer:
                return
            batch = self._buffer[: self._options.max_batch]
            del self._buffer[: self._options.max_batch]
            try:
                await self._compare(record, batch)
            finally:
                self._pending -= len(batch)

    async def _compare(self, record: ShadowRecord, batch: list[tuple[TextPair, str]]) -> None:
        try:
            handle = self._handles.get(record.app)
            if handle is None:
                handle = self._handles[record.app] = self._handle_for(record.app)
            result: BatchResult = await asyncio.wait_for(
                handle.classify.remote([pair for pair, _ in batch]),
                timeout=self._options.timeout_s,
            )
            shadow = _top_intents(result.probabilities, result.labels)
        except Exception as exc:  # noqa: BLE001 - the shadow's failures are counted, not raised
            SHADOW_ERRORS.labels(record.version).inc(len(batch))
            self._counts(record)[ERRORS] += len(batch)
            if not self._failing:  # once per run of failures, not once per call
                log.warning("shadow %s failed: %s: %s", record.version, type(exc).__name__, exc)
                self._failing = True
            return
        self._failing = False
        counts = self._counts(record)  # after the await: a sync in between saved the rest
        agreements = 0
        for (_, served_intent), shadow_intent in zip(batch, shadow, strict=True):
            if served_intent == shadow_intent:
                agreements += 1
            else:
                SHADOW_DISAGREEMENTS.labels(record.version, served_intent, shadow_intent).inc()
                counts[f"{PAIR}{served_intent}|{shadow_intent}"] += 1
        SHADOW_COMPARED.labels(record.version).inc(len(batch))
        SHADOW_AGREEMENTS.labels(record.version).inc(agreements)
        counts[COMPARED] += len(batch)
        counts[AGREEMENTS] += agreements

    # -- the record and the counts in Redis ------------------------------------------------

    def start(self) -> None:
        """Start following the Redis record on the running loop (idempotent)."""
        self._bind_loop()
        if self._options.redis_url is None:
            return
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # Tasks and connections of another (finished) loop are of no use here.
            self._loop, self._sender, self._watcher, self._redis = loop, None, None, None
            self._sync_lock = asyncio.Lock()
            self._pending -= len(self._buffer)
            self._buffer.clear()

    async def _watch(self) -> None:
        while True:
            await self.sync()
            await asyncio.sleep(self._options.poll_s)

    def _client(self, url: str) -> Any:
        if self._redis is None:
            import redis.asyncio as aioredis

            timeout = self._options.redis_timeout_s
            self._redis = aioredis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout
            )
        return self._redis

    async def sync(self) -> None:
        """Read the record and write this front's changed totals to Redis (the watcher's
        round)."""
        url = self._options.redis_url
        if url is None:
            return
        async with self._sync_lock:  # one write at a time: an older total never lands last
            await self._sync(url)

    async def _sync(self, url: str) -> None:
        client = self._client(url)
        unsaved, self._unsaved = self._unsaved, set()
        writes = {
            counts_key_for(record_id): {
                f"{self._front}{FRONT_SEPARATOR}{name}": value
                for name, value in self._totals[record_id].items()
            }
            for record_id in unsaved
            if record_id in self._totals
        }
        try:
            raw = await client.get(RECORD_KEY)
            record = ShadowRecord.from_json(raw) if raw else None
            if any(writes.values()):
                pipe = client.pipeline(transaction=False)
                for key, fields in writes.items():
                    if fields:
                        pipe.hset(key, mapping=fields)
                        pipe.expire(key, COUNTS_TTL_S)
                await pipe.execute()
        except BaseException as exc:
            self._unsaved |= unsaved  # written again next round: the totals, not increments
            if not isinstance(exc, Exception):
                raise  # cancelled: the totals stay for aclose's last write
            if not self._redis_failing:
                log.warning("shadow record not read: %s: %s", type(exc).__name__, exc)
                self._redis_failing = True
            return
        self._redis_failing = False
        self.set_record(record)

    async def aclose(self) -> None:
        """Stop following the record; add the last counts to Redis."""
        for task in (self._watcher, self._sender):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._watcher = self._sender = None
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.sync(), timeout=2)
            with contextlib.suppress(Exception):
                await self._redis.aclose()
            self._redis = None
