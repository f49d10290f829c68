"""The worker process's event loop and HTTP session: kept from job to job, never shared with a
forked child, and an abandoned job's sends are cancelled."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from platform_api.webhooks.send_loop import SendLoop, send_loop
from tests.platform_api.webhooks.conftest import create_webhook, emit, settled
from tests.platform_api.webhooks.receiver import Receiver


class Abandoned(Exception):
    """What RQ's job timeout raises in the waiting thread (it is JobTimeoutException)."""


@pytest.fixture
def loop() -> Iterator[SendLoop]:
    sender = SendLoop()
    yield sender
    sender.close()


@pytest.mark.db
def test_jobs_of_one_process_reuse_the_connection(
    client: TestClient,
    auth_headers: dict[str, str],
    receiver: Receiver,
    pump: Callable[..., None],
) -> None:
    hook = create_webhook(client, auth_headers, receiver.plan("reuse"))
    emit()
    pump(settled(client, auth_headers, hook["id"], count=1))
    emit()
    pump(settled(client, auth_headers, hook["id"], count=2))

    first, second = receiver.received("reuse")
    # Two jobs, one TCP connection: the second did not connect again.
    assert first.client_port == second.client_port != 0


def test_a_forked_child_starts_a_loop_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    parents = send_loop()
    assert send_loop() is parents
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as in a work horse after os.fork()
    childs = send_loop()
    assert childs is not parents and childs.usable()
    childs.close()


def test_sends_cut_short_by_the_job_timeout_are_cancelled(loop: SendLoop) -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def sends() -> None:
        started.set()
        try:
            await asyncio.Event().wait()  # a receiver that never answers
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def timeout(*_: object) -> None:
        raise Abandoned

    previous = signal.signal(signal.SIGALRM, timeout)
    try:
        # RQ's death penalty: SIGALRM, whose handler raises in the thread waiting for the job.
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Abandoned):
            loop.run(sends())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert started.is_set()
    assert cancelled.wait(timeout=10)


def test_a_stopped_loop_is_replaced() -> None:
    first = send_loop()
    first.close()
    assert not first.usable()
    second = send_loop()
    assert second is not first and second.usable()
