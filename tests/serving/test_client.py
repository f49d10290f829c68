"""The front's micro-batcher (``ClassifierClient``) against a stand-in deployment handle."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from serving.client import ClassifierClient, ClassifierUnavailable, ClientOptions
from serving.protocol import BatchResult, ClassifierOverloaded, TextPair

LABELS = ("first", "second")


class _Method:
    def __init__(self, function: Any) -> None:
        self._function = function

    def remote(self, *args: Any) -> Any:
        return self._function(*args)


class FakeHandle:
    """Answers like the deployment: column 0 of each row is the number in the message."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self.error: Exception | None = None
        self.classify = _Method(self._classify)
        self.model_version = _Method(self._model_version)

    async def _classify(self, pairs: Sequence[TextPair]) -> BatchResult:
        self.calls.append(len(pairs))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.gate.wait()
            if self.error is not None:
                raise self.error
            numbers = [float(text.split()[-1]) for text, _ in pairs]
            probabilities = np.array([[n, 0.0] for n in numbers], dtype=np.float32)
            return BatchResult(probabilities, LABELS, "v-test", len(pairs))
        finally:
            self.in_flight -= 1

    async def _model_version(self) -> str:
        return "v-test"


def _client(handle: FakeHandle, **options: Any) -> ClassifierClient:
    defaults: dict[str, Any] = {
        "ray_address": None,
        "max_batch_messages": 64,
        "batch_wait_s": 0.01,
        "timeout_s": 30.0,
        "max_inflight_calls": 2,
    }
    return ClassifierClient(ClientOptions(**{**defaults, **options}), handle=handle)


def _pairs(start: int, count: int) -> list[TextPair]:
    return [(f"message {i}", None) for i in range(start, start + count)]


def _numbers(results: list[BatchResult]) -> list[int]:
    return [int(row[0]) for result in results for row in result.probabilities]


async def test_concurrent_requests_share_one_model_call() -> None:
    handle = FakeHandle()
    client = _client(handle)
    answers = await asyncio.gather(*(client.classify(_pairs(i, 1)) for i in range(10)))
    assert handle.calls == [10]
    # Each caller gets its own row back, not its neighbours'.
    assert [_numbers(answer) for answer in answers] == [[i] for i in range(10)]


async def test_large_request_is_split_into_calls_in_order() -> None:
    handle = FakeHandle()
    client = _client(handle, max_batch_messages=64, max_inflight_calls=0)
    results = await client.classify(_pairs(0, 150))
    assert sorted(handle.calls) == [22, 64, 64]
    assert _numbers(results) == list(range(150))
    assert [result.labels for result in results] == [LABELS] * 3


async def test_in_flight_cap_holds_requests_into_the_next_group() -> None:
    handle = FakeHandle()
    handle.gate.clear()
    client = _client(handle, max_inflight_calls=1, batch_wait_s=0)
    first = asyncio.ensure_future(client.classify(_pairs(0, 1)))
    while not handle.calls:
        await asyncio.sleep(0)
    queued = [asyncio.ensure_future(client.classify(_pairs(i, 1))) for i in range(1, 4)]
    await asyncio.sleep(0.05)
    assert handle.calls == [1]  # nothing more is sent while the one call is under way
    handle.gate.set()
    answers = await asyncio.gather(first, *queued)
    assert handle.calls == [1, 3]
    assert handle.most_in_flight == 1
    assert [_numbers(answer) for answer in answers] == [[0], [1], [2], [3]]


async def test_a_call_that_never_answers_times_out_as_unavailable() -> None:
    handle = FakeHandle()
    handle.gate.clear()
    client = _client(handle, timeout_s=0.05)
    with pytest.raises(ClassifierUnavailable, match="within"):
        await client.classify(_pairs(0, 2))


async def test_a_failed_call_fails_every_request_in_its_group() -> None:
    handle = FakeHandle()
    handle.error = RuntimeError("replica died")
    client = _client(handle)
    outcomes = await asyncio.gather(
        *(client.classify(_pairs(i, 1)) for i in range(3)), return_exceptions=True
    )
    assert handle.calls == [3]
    assert all(isinstance(outcome, ClassifierUnavailable) for outcome in outcomes)
    # The client recovers: the next call goes through.
    handle.error = None
    assert _numbers(await client.classify(_pairs(7, 1))) == [7]


async def test_close_fails_requests_still_waiting() -> None:
    handle = FakeHandle()
    client = _client(handle, batch_wait_s=60)
    waiting = asyncio.ensure_future(client.classify(_pairs(0, 1)))
    await asyncio.sleep(0)
    await client.aclose()
    with pytest.raises(ClassifierUnavailable, match="shutting down"):
        await waiting
    assert handle.calls == []


async def test_ready_reports_the_deployment_answering() -> None:
    assert await _client(FakeHandle()).ready() is True


async def test_a_full_queue_sheds_new_requests_at_once() -> None:
    handle = FakeHandle()
    handle.gate.clear()  # the model is busy: calls do not return
    client = _client(handle, max_inflight_calls=1, max_queued_messages=5, batch_wait_s=0)
    first = asyncio.create_task(client.classify(_pairs(0, 2)))  # sent to the model
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(client.classify(_pairs(2, 5)))  # waits in the queue
    await asyncio.sleep(0.01)
    with pytest.raises(ClassifierOverloaded):
        await client.classify(_pairs(7, 1))  # 5 queued + 1 > 5: refused, not queued
    handle.gate.set()
    assert _numbers(await first) == [0, 1]
    assert _numbers(await waiting) == [2, 3, 4, 5, 6]
    assert _numbers(await client.classify(_pairs(8, 1))) == [8]  # room again


async def test_the_deadline_covers_the_wait_in_the_queue() -> None:
    handle = FakeHandle()
    handle.gate.clear()
    client = _client(handle, max_inflight_calls=1, batch_wait_s=0, timeout_s=0.2)
    blocked = asyncio.create_task(client.classify(_pairs(0, 1)))
    await asyncio.sleep(0.01)
    started = asyncio.get_running_loop().time()
    with pytest.raises(ClassifierUnavailable, match="within"):
        await client.classify(_pairs(1, 1))  # never leaves the queue
    assert asyncio.get_running_loop().time() - started < 5
    with pytest.raises(ClassifierUnavailable):
        await blocked  # the model never answered it either
    handle.gate.set()


async def test_not_ready_says_why_and_logs_once_per_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handle = FakeHandle()

    async def no_replica() -> str:
        raise RuntimeError("no replica of IntentClassifier is running")

    handle.model_version = _Method(no_replica)
    client = _client(handle)
    caplog.set_level("DEBUG", logger="serving.client")
    for _ in range(3):
        assert await client.ready() is False
    assert client.not_ready_reason == "RuntimeError: no replica of IntentClassifier is running"
    handle.model_version = _Method(handle._model_version)
    assert await client.ready() is True
    assert await client.ready() is True
    assert client.not_ready_reason is None
    said = [r.getMessage() for r in caplog.records if r.levelname in ("INFO", "WARNING")]
    assert said == [
        "classifier not ready: RuntimeError: no replica of IntentClassifier is running",
        "classifier ready",
    ]
    assert not any(r.exc_info for r in caplog.records if r.levelname != "DEBUG")
