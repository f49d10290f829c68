"""Shadow traffic: sampling, the copy bound, comparison and counts; then the whole path on Ray.

The unit tests drive ``ShadowTraffic`` (and a ``ClassifierClient`` with one) against stand-in
deployment handles. The last test deploys the shipped model as the shadow of itself under
another version name, sends live traffic through the front over HTTP and reads the report.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import redis
from fastapi import FastAPI
from prometheus_client import REGISTRY
from typer.testing import CliRunner

from core.settings import Settings, get_settings
from serving.client import ClassifierClient, ClientOptions
from serving.protocol import BatchResult, TextPair
from serving.shadow import (
    RECORD_KEY,
    ShadowOptions,
    ShadowRecord,
    ShadowTraffic,
    read_counts,
    read_record,
    write_record,
)
from switchyard.cli import app as cli

LABELS = ("cancel_order", "other", "track_order")


def _result(intents: Sequence[str]) -> BatchResult:
    """Probabilities whose top intent is each of ``intents`` (one-hot rows)."""
    rows = np.zeros((len(intents), len(LABELS)), dtype=np.float32)
    for row, intent in enumerate(intents):
        rows[row, LABELS.index(intent)] = 1.0
    return BatchResult(rows, LABELS, "served", len(intents))


class _Method:
    def __init__(self, function: Any) -> None:
        self._function = function

    def remote(self, *args: Any) -> Any:
        return self._function(*args)


class FakeShadow:
    """A deployment handle whose top intent is ``answer(message)``; can hold or fail calls."""

    def __init__(self, answer: Callable[[str], str] = lambda text: text.split()[0]) -> None:
        self.answer = answer
        self.gate = asyncio.Event()
        self.gate.set()
        self.error: Exception | None = None
        self.in_flight = 0
        self.messages: list[str] = []
        self.classify = _Method(self._classify)

    async def _classify(self, pairs: Sequence[TextPair]) -> BatchResult:
        self.in_flight += len(pairs)
        try:
            await self.gate.wait()
            if self.error is not None:
                raise self.error
            self.messages += [text for text, _ in pairs]
            return _result([self.answer(text) for text, _ in pairs])
        finally:
            self.in_flight -= len(pairs)


def _record(sample_rate: float | None = None) -> ShadowRecord:
    # A version of its own per test: the Prometheus counters are process-wide.
    return ShadowRecord(
        app="shadow-app", version=f"v-{uuid.uuid4().hex[:8]}", sample_rate=sample_rate
    )


def _shadow(handle: FakeShadow, **options: Any) -> ShadowTraffic:
    defaults: dict[str, Any] = {"redis_url": None, "wait_s": 0.0, "seed": 13}
    return ShadowTraffic(ShadowOptions(**{**defaults, **options}), handle_for=lambda app: handle)


def _metric(name: str, version: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(
        f"switchyard_shadow_{name}_total", {"shadow_version": version, **labels}
    )
    return value or 0.0


def _pairs(intents: Sequence[str]) -> list[TextPair]:
    return [(f"{intent} message {i}", None) for i, intent in enumerate(intents)]


async def _drained(shadow: ShadowTraffic, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while shadow.pending:
        assert time.monotonic() < deadline, f"{shadow.pending} copies still pending"
        await asyncio.sleep(0.005)


@pytest.mark.parametrize(("record_rate", "expected"), [(None, 0.10), (0.5, 0.5)])
async def test_sampled_fraction_is_close_to_the_rate(
    record_rate: float | None, expected: float
) -> None:
    handle = FakeShadow()
    shadow = _shadow(handle, sample_rate=0.10, max_pending=100_000)
    record = _record(record_rate)  # a rate in the record overrides the front's setting
    shadow.set_record(record)
    intents = ["track_order"] * 10
    for _ in range(400):
        shadow.offer(_pairs(intents), _result(intents))
    await _drained(shadow)
    compared = _metric("compared", record.version)
    assert compared == len(handle.messages)
    assert abs(compared / 4000 - expected) < 0.02
    assert _metric("agreements", record.version) == compared
    assert _metric("dropped", record.version) == 0


async def test_offer_without_a_record_copies_nothing() -> None:
    handle = FakeShadow()
    shadow = _shadow(handle, sample_rate=1.0)
    shadow.offer(_pairs(["other"]), _result(["other"]))
    assert shadow.pending == 0 and handle.messages == []


async def test_copies_are_bounded_and_the_excess_is_dropped_and_counted() -> None:
    handle = FakeShadow()
    handle.gate.clear()  # the shadow holds every call
    shadow = _shadow(handle, sample_rate=1.0, max_pending=20, max_batch=8)
    record = _record()
    shadow.set_record(record)
    intents = ["other"] * 5
    most = 0
    for _ in range(20):
        shadow.offer(_pairs(intents), _result(intents))
        await asyncio.sleep(0)
        most = max(most, shadow.pending)
    assert most == 20
    assert handle.in_flight == 8  # one call under way, the rest waits in the bound
    assert _metric("dropped", record.version) == 100 - 20
    handle.gate.set()
    await _drained(shadow)
    assert _metric("compared", record.version) == 20


async def test_a_disagreement_counts_its_served_and_shadow_intents() -> None:
    # The shadow reads "track_order" messages as "cancel_order", agrees on the rest.
    handle = FakeShadow(
        lambda text: {"track_order": "cancel_order"}.get(text.split()[0], text.split()[0])
    )
    shadow = _shadow(handle, sample_rate=1.0)
    record = _record()
    shadow.set_record(record)
    intents = ["track_order", "other", "other", "cancel_order"]
    shadow.offer(_pairs(intents), _result(intents))
    await _drained(shadow)
    pair = {"served_intent": "track_order", "shadow_intent": "cancel_order"}
    assert _metric("disagreements", record.version, **pair) == 1
    reverse = {"served_intent": "cancel_order", "shadow_intent": "track_order"}
    assert _metric("disagreements", record.version, **reverse) == 0
    assert _metric("compared", record.version) == 4
    assert _metric("agreements", record.version) == 3


class _Primary:
    """The served deployment: answers the intent named first in each message."""

    def __init__(self) -> None:
        self.classify = _Method(self._classify)

    async def _classify(self, pairs: Sequence[TextPair]) -> BatchResult:
        return _result([text.split()[0] for text, _ in pairs])


def _client(shadow: ShadowTraffic) -> ClassifierClient:
    options = ClientOptions(
        ray_address=None,
        max_batch_messages=64,
        batch_wait_s=0.001,
        timeout_s=5.0,
        max_inflight_calls=2,
    )
    return ClassifierClient(options, handle=_Primary(), shadow=shadow)


@pytest.mark.parametrize("failure", ["raises", "never answers"])
async def test_a_failing_shadow_is_counted_and_never_reaches_the_request(failure: str) -> None:
    handle = FakeShadow()
    if failure == "raises":
        handle.error = RuntimeError("shadow replica died")
    else:
        handle.gate.clear()
    shadow = _shadow(handle, sample_rate=1.0, timeout_s=0.2)
    record = _record()
    shadow.set_record(record)
    client = _client(shadow)
    started = time.perf_counter()
    results = await asyncio.gather(*(client.classify(_pairs(["track_order"])) for _ in range(10)))
    # The requests were answered by the primary, without waiting for the shadow.
    assert time.perf_counter() - started < 0.15
    assert [r.labels[int(np.argmax(r.probabilities[0]))] for [r] in results] == ["track_order"] * 10
    await _drained(shadow)
    assert _metric("errors", record.version) == 10
    assert _metric("compared", record.version) == 0
    # Later requests are still answered, and still copied.
    await client.classify(_pairs(["other"]))
    await _drained(shadow)
    assert _metric("errors", record.version) == 11
    await client.aclose()


@pytest.mark.db
async def test_fronts_follow_the_record_and_add_their_counts_in_redis(
    settings: Settings, redis_client: redis.Redis
) -> None:
    handle = FakeShadow(
        lambda text: "other" if text.startswith("cancel_order") else text.split()[0]
    )
    shadow = _shadow(handle, redis_url=settings.redis_url, sample_rate=1.0, poll_s=0.02)
    shadow.start()
    record = _record()
    write_record(redis_client, record)
    deadline = time.monotonic() + 5
    while shadow.record != record:
        assert time.monotonic() < deadline, "the front did not pick up the record"
        await asyncio.sleep(0.01)
    intents = ["track_order", "track_order", "cancel_order", "other"]
    shadow.offer(_pairs(intents), _result(intents))
    await _drained(shadow)
    await shadow.sync()
    counts = read_counts(redis_client, record)
    assert (counts.compared, counts.agreements, counts.dropped, counts.errors) == (4, 3, 0, 0)
    assert counts.disagreements == {("cancel_order", "other"): 1}
    report = counts.report(record)
    assert "compared 4  agreements 3  agreement 75.0%" in report
    assert "cancel_order -> other: 1" in report

    redis_client.delete(RECORD_KEY)
    while shadow.record is not None:
        assert time.monotonic() < deadline + 5, "the front did not notice the stop"
        await asyncio.sleep(0.01)
    shadow.offer(_pairs(intents), _result(intents))
    assert shadow.pending == 0
    await shadow.aclose()


@pytest.mark.db
async def test_a_write_whose_reply_was_lost_is_not_counted_twice(
    settings: Settings, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redis.asyncio.client as aioredis_client

    shadow = _shadow(FakeShadow(), redis_url=settings.redis_url, sample_rate=1.0)
    record = _record()
    write_record(redis_client, record)
    await shadow.sync()
    assert shadow.record == record
    intents = ["track_order", "other", "other"]
    shadow.offer(_pairs(intents), _result(intents))
    await _drained(shadow)

    # Redis applies the write, then the reply times out: the front must write it again.
    execute = aioredis_client.Pipeline.execute

    async def applied_then_timed_out(self: Any, *args: Any, **kwargs: Any) -> Any:
        await execute(self, *args, **kwargs)
        raise redis.exceptions.TimeoutError("Timeout reading from socket")

    monkeypatch.setattr(aioredis_client.Pipeline, "execute", applied_then_timed_out)
    await shadow.sync()
    monkeypatch.setattr(aioredis_client.Pipeline, "execute", execute)
    await shadow.sync()
    await shadow.sync()
    counts = read_counts(redis_client, record)
    assert (counts.compared, counts.agreements) == (3, 3)

    # Counts go on adding up after the retry, and two fronts add up in the report.
    other_front = _shadow(FakeShadow(), redis_url=settings.redis_url, sample_rate=1.0)
    await other_front.sync()
    for front in (shadow, other_front):
        front.offer(_pairs(intents), _result(intents))
        await _drained(front)
        await front.sync()
    assert read_counts(redis_client, record).compared == 9
    await shadow.aclose()
    await other_front.aclose()


@pytest.mark.db
def test_report_and_argument_errors_of_the_command(
    settings: Settings, redis_client: redis.Redis
) -> None:
    runner = CliRunner()
    nothing = runner.invoke(cli, ["model", "shadow", "--report"])
    assert nothing.exit_code == 1 and "no shadow traffic running" in nothing.output
    both = runner.invoke(cli, ["model", "shadow", "v1", "--stop"])
    assert both.exit_code == 2

    record = ShadowRecord(app="switchyard-shadow", version="v2", sample_rate=0.25)
    write_record(redis_client, record)
    redis_client.hset(
        record.counts_key,
        mapping={
            "compared": 10,
            "agreements": 7,
            "pair:track_order|other": 1,
            "pair:complaint|compliment": 2,
        },
    )
    result = runner.invoke(cli, ["model", "shadow", "--report"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "shadow v2 (application switchyard-shadow, sample rate 0.25)"
    assert "agreement 70.0%" in lines[1]
    # Disagreement pairs, the most frequent first.
    assert lines[-2:] == ["  complaint -> compliment: 2", "  track_order -> other: 1"]


# -- end to end: Ray, the front over HTTP, the command ------------------------------------

SHADOW_SUFFIX = "-shadow"
SINGLE = "/v1/inference/intent-classify"
# Messages the model reads without doubt: the same weights must agree on every one.
CLEAR_MESSAGES = [
    "Where is my order? It still hasn't arrived.",
    "Please cancel my order, I don't want it anymore.",
    "I want to return the shoes I bought, they don't fit.",
    "I want my money back for this order.",
    "I need to change the shipping address on my order.",
    "My credit card was declined at checkout.",
    "This is the worst service I have ever had.",
    "Thank you so much, your support team was amazing!",
    "Is this laptop available in silver?",
    "Do you have a job opening in marketing?",
]


def _add_version(models_root: Path, source: str, version: str) -> None:
    """The files of ``source`` under the name ``version`` (as tests/serving/conftest.py does)."""
    target = models_root / version
    if target.exists():
        return
    target.mkdir()
    for path in (models_root / source).iterdir():  # a routed version's route folders included
        if path.name != "model_card.json":
            (target / path.name).symlink_to(path.resolve(), target_is_directory=path.is_dir())
    card = json.loads((models_root / source / "model_card.json").read_text())
    card["model_version"] = version
    (target / "model_card.json").write_text(json.dumps(card))


def _send(url: str, headers: dict[str, str], count: int, clients: int = 32) -> list[int]:
    async def run() -> list[int]:
        limits = httpx.Limits(max_connections=clients)
        async with httpx.AsyncClient(
            base_url=url, headers=headers, limits=limits, timeout=60
        ) as http:
            gate = asyncio.Semaphore(clients)

            async def one(i: int) -> int:
                async with gate:
                    body = {"message": CLEAR_MESSAGES[i % len(CLEAR_MESSAGES)]}
                    return (await http.post(SINGLE, json=body)).status_code

            return list(await asyncio.gather(*(one(i) for i in range(count))))

    return asyncio.run(run())


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _cli(args: list[str], models_root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SWITCHYARD_MODELS_ROOT", str(models_root))
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli, args)
    finally:
        monkeypatch.delenv("SWITCHYARD_MODELS_ROOT")
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
@pytest.mark.db
def test_shadow_compares_live_traffic_reports_and_stops(
    ray_app: FastAPI,
    ray_live_server: str,
    auth_headers: dict[str, str],
    serve_app: str,
    models_root: Path,
    settings: Settings,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ray import serve

    from serving.rollout import forget_missing_shadow, remove_shadow, shadow_app_name
    from tests.serving.conftest import deploy_session_app

    client: ClassifierClient = ray_app.state.classifier
    shadow = client.shadow
    assert shadow is not None
    version = f"{serve_app}{SHADOW_SUFFIX}"
    app_name = shadow_app_name(settings.serve_app_name)
    _add_version(models_root, serve_app, version)
    rate, requests = 0.2, 200
    try:
        output = _cli(
            ["model", "shadow", version, "--sample-rate", str(rate)], models_root, monkeypatch
        )
        assert f"shadowing {version}" in output
        assert serve.status().applications[app_name].status == "RUNNING"
        _wait_for(
            lambda: shadow.record is not None and shadow.record.version == version, "the front"
        )

        statuses = _send(ray_live_server, auth_headers, requests)
        assert statuses == [200] * requests
        _wait_for(lambda: shadow.pending == 0, "the copies")
        compared = _metric("compared", version)
        assert _metric("errors", version) == 0 and _metric("dropped", version) == 0
        assert 0.4 * rate * requests <= compared <= 1.8 * rate * requests
        assert _metric("agreements", version) == compared  # the same weights agree
        record = read_record(redis_client)
        assert record is not None
        _wait_for(
            lambda: read_counts(redis_client, record).compared == compared, "the counts in Redis"
        )

        report = _cli(["model", "shadow", "--report"], models_root, monkeypatch)
        assert f"compared {int(compared)}  agreements {int(compared)}  agreement 100.0%" in report
        assert "disagreements: none" in report

        # Redeploying the served application (a model switch, a restart) keeps the shadow.
        assert deploy_session_app(models_root) == serve_app
        assert app_name in serve.status().applications
        assert not forget_missing_shadow(settings)  # its record names a deployed application

        stopped = _cli(["model", "shadow", "--stop"], models_root, monkeypatch)
        assert "shadow stopped" in stopped
        assert app_name not in serve.status().applications
        assert read_record(redis_client) is None
        _wait_for(lambda: shadow.record is None, "the front to stop copying")
        assert _send(ray_live_server, auth_headers, 50) == [200] * 50
        assert shadow.pending == 0
        assert _metric("compared", version) == compared

        # A record left behind by a cluster that is gone is dropped by the next deploy.
        write_record(redis_client, ShadowRecord(app="gone-shadow", version=version))
        assert forget_missing_shadow(settings)
        assert read_record(redis_client) is None
    finally:
        redis_client.delete(RECORD_KEY)
        remove_shadow(settings)
