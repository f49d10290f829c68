"""``ClassifierClient``: the HTTP front's way into the model deployment.

A Ray hop costs several milliseconds of CPU here, a message in a batch well under one. So
the client gathers the messages of concurrent requests for a moment and sends them in one
deployment-handle call; the replica's ``@serve.batch`` then merges calls from every front.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.settings import Settings
from serving.inference_metrics import BATCH_SIZE
from serving.protocol import (
    APP_NAME,
    DEPLOYMENT_NAME,
    BatchResult,
    ClassifierOverloaded,
    ClassifierUnavailable,
    TextPair,
)
from serving.shadow import ShadowTraffic

__all__ = ["ClassifierClient", "ClassifierUnavailable", "ClientOptions"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClientOptions:
    """How the front groups requests and reaches the deployment (settings build it)."""

    ray_address: str | None
    max_batch_messages: int
    batch_wait_s: float
    timeout_s: float
    max_inflight_calls: int  # 0: no cap
    max_queued_messages: int = 0  # 0: no bound
    app_name: str = APP_NAME
    deployment_name: str = DEPLOYMENT_NAME

    @classmethod
    def from_settings(cls, settings: Settings) -> ClientOptions:
        return cls(
            ray_address=settings.ray_address,
            max_batch_messages=settings.inference_batch_max_messages,
            batch_wait_s=settings.inference_batch_wait_ms / 1000,
            timeout_s=settings.inference_timeout_s,
            max_inflight_calls=settings.inference_max_inflight_calls,
            max_queued_messages=settings.inference_max_queued_messages,
            app_name=settings.serve_app_name,
        )


@dataclass
class _Pending:
    pairs: Sequence[TextPair]
    future: asyncio.Future[BatchResult]


@dataclass
class _Queue:
    """Requests waiting for a model call, and the calls under way (one per event loop)."""

    items: deque[_Pending] = field(default_factory=deque)
    messages: int = 0
    in_flight: int = 0
    timer: asyncio.TimerHandle | None = None


class ClassifierClient:
    """Async client of the ``IntentClassifier`` deployment; connects to Ray on first use."""

    def __init__(
        self, options: ClientOptions, *, handle: Any = None, shadow: ShadowTraffic | None = None
    ) -> None:
        """``handle`` stands in for the deployment handle (tests); None: join Ray on first use.

        ``shadow`` gets a sampled copy of every answered call (``serving/shadow.py``).
        """
        self._ray_address = options.ray_address
        self._max_batch = options.max_batch_messages
        self._wait_s = options.batch_wait_s
        self._timeout_s = options.timeout_s
        self._max_inflight = options.max_inflight_calls or 1_000_000
        self._max_queued = options.max_queued_messages or 1_000_000_000
        self._app_name = options.app_name
        self._deployment_name = options.deployment_name
        self._handle: Any = handle
        self._classify_method: Any = None  # handle.classify, made once (each lookup copies options)
        self._connect_lock = threading.Lock()
        self._queues: dict[asyncio.AbstractEventLoop, _Queue] = {}
        self._shadow = shadow
        self._not_ready_reason: str | None = None
        self._readiness_checked = False

    @property
    def shadow(self) -> ShadowTraffic | None:
        """Where copies of live traffic go while a shadow model runs (None: never)."""
        return self._shadow

    # -- connection -----------------------------------------------------------------------

    def _join_ray(self) -> None:
        import ray

        from serving.ray_connect import connect_ray

        with self._connect_lock:
            if not self._ray_address and not ray.is_initialized():
                # Guessing a cluster ("auto") can latch onto a stale one, and Ray then ends
                # the whole process when its GCS never answers.
                raise ClassifierUnavailable("no Ray cluster configured (set RAY_ADDRESS)")
            connect_ray(self._ray_address)

    async def _get_handle(self) -> Any:
        if self._handle is not None:
            return self._handle
        # ray.init blocks for a second or two: join from a thread, keeping the loop serving.
        await asyncio.to_thread(self._join_ray)
        if self._handle is None:
            from ray import serve

            # Made on the event loop's own thread: with RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP=0
            # (part of RAY_SERVE_THROUGHPUT_OPTIMIZED=1) the handle's router binds to the loop
            # that creates it, and a worker thread has none.
            # _by_reference=False: calls go to the replica over Serve's gRPC transport instead
            # of as Ray actor tasks; measured here it halves the CPU a call costs on both
            # sides (~4 -> ~2 ms in the front). A private option of the pinned Ray release
            # (ray[serve]==2.60.0): re-measure when upgrading.
            self._handle = serve.get_deployment_handle(
                self._deployment_name, app_name=self._app_name
            ).options(_by_reference=False)
        return self._handle

    @property
    def not_ready_reason(self) -> str | None:
        """Why the last readiness check failed, in one line (None: it passed, or none ran)."""
        return self._not_ready_reason

    async def ready(self) -> bool:
        """True when the deployment answers (``/readyz``); otherwise ``not_ready_reason``
        says why. Logged once per change of state, not once per check."""
        if self._shadow is not None:
            self._shadow.start()  # the app's warm-up calls this: follow the record from now on
        try:
            handle = await self._get_handle()
            version = await asyncio.wait_for(handle.model_version.remote(), timeout=5)
            reason = None if version else "the model answered without a version"
        except ClassifierUnavailable as exc:
            reason = str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
            log.debug("readiness check failed", exc_info=True)
            reason = await self._serve_reason() or f"{type(exc).__name__}: {exc}"
        self._record_readiness(reason)
        return reason is None

    async def _serve_reason(self) -> str | None:
        """Serve's own word on the application (a failed build names its cause)."""
        import ray

        from serving.deploy_status import not_ready_reason

        if not ray.is_initialized():  # never start or guess a cluster just to ask
            return None
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(not_ready_reason, self._app_name), timeout=5
            )
        except Exception:  # noqa: BLE001 - the caller falls back to the error it saw
            return None

    def _record_readiness(self, reason: str | None) -> None:
        if reason == self._not_ready_reason and self._readiness_checked:
            return
        if reason is None:
            log.info("classifier ready")
        else:
            log.warning("classifier not ready: %s", reason)
        self._not_ready_reason = reason
        self._readiness_checked = True

    # -- classification -------------------------------------------------------------------

    async def classify(self, pairs: Sequence[TextPair]) -> list[BatchResult]:
        """Probabilities for ``pairs``, as one result per model call covering them in order.

        Small requests share a model call with concurrent ones; large ones are split into
        calls of at most ``max_batch_messages`` that the replicas run in parallel.
        """
        if not pairs:
            raise ValueError("nothing to classify")
        queue = self._queue()
        if queue.messages + len(pairs) > self._max_queued:
            raise ClassifierOverloaded(
                f"{queue.messages} messages already wait for the model (bound {self._max_queued})"
            )
        chunks = [pairs[i : i + self._max_batch] for i in range(0, len(pairs), self._max_batch)]
        futures = [self._enqueue(chunk) for chunk in chunks]
        try:
            # One deadline for the wait in the queue and the model call together; a timeout
            # scope rather than wait_for/gather, which would add a task per request.
            async with asyncio.timeout(self._timeout_s):
                return [await future for future in futures]
        except TimeoutError as exc:
            raise ClassifierUnavailable(
                f"no answer from the model within {self._timeout_s:g}s"
            ) from exc
        finally:
            for future in futures:
                if not future.done():
                    future.cancel()  # given up (deadline, cancelled): the queue skips it

    def _queue(self) -> _Queue:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        return queue

    def _enqueue(self, pairs: Sequence[TextPair]) -> asyncio.Future[BatchResult]:
        loop = asyncio.get_running_loop()
        queue = self._queue()
        future: asyncio.Future[BatchResult] = loop.create_future()
        queue.items.append(_Pending(pairs, future))
        queue.messages += len(pairs)
        self._schedule(queue, loop)
        return future

    def _schedule(self, queue: _Queue, loop: asyncio.AbstractEventLoop) -> None:
        """Send full groups now, start the gathering timer for a partial one.

        While ``max_inflight_calls`` calls are under way nothing is sent: the queue keeps
        growing into a bigger group, and the next completion sends it. Under load this
        makes the groups as large as the model's pace allows, at no cost to a lone request.
        """
        while queue.items and queue.in_flight < self._max_inflight:
            if queue.messages >= self._max_batch:
                self._dispatch(queue, loop)
            elif queue.timer is None:
                queue.timer = loop.call_later(self._wait_s, self._on_timer, queue, loop)
                return
            else:
                return

    def _on_timer(self, queue: _Queue, loop: asyncio.AbstractEventLoop) -> None:
        queue.timer = None
        if queue.items and queue.in_flight < self._max_inflight:
            self._dispatch(queue, loop)
        self._schedule(queue, loop)

    def _dispatch(self, queue: _Queue, loop: asyncio.AbstractEventLoop) -> None:
        items: list[_Pending] = []
        count = 0
        while queue.items and count + len(queue.items[0].pairs) <= self._max_batch:
            item = queue.items.popleft()
            queue.messages -= len(item.pairs)
            if item.future.done():  # its request gave up (deadline): do not run it
                continue
            items.append(item)
            count += len(item.pairs)
        if not items:
            return
        if not queue.items and queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        queue.in_flight += 1
        loop.create_task(self._call(queue, items, loop))

    async def _call(
        self, queue: _Queue, items: list[_Pending], loop: asyncio.AbstractEventLoop
    ) -> None:
        pairs = [pair for item in items for pair in item.pairs]
        BATCH_SIZE.observe(len(pairs))
        try:
            method = self._classify_method
            if method is None:
                method = self._classify_method = (await self._get_handle()).classify
            async with asyncio.timeout(self._timeout_s):
                result: BatchResult = await method.remote(pairs)
        except Exception as exc:  # noqa: BLE001 - every waiter learns of the failure
            log.exception("model call failed for %d messages", len(pairs))
            error = ClassifierUnavailable(f"{type(exc).__name__}: {exc}")
            for item in items:
                if not item.future.done():
                    item.future.set_exception(error)
            return
        finally:
            queue.in_flight -= 1
            # Whatever queued up while this call ran has waited long enough: send it now.
            if queue.items and queue.in_flight < self._max_inflight:
                self._dispatch(queue, loop)
            self._schedule(queue, loop)
        start = 0
        for item in items:
            end = start + len(item.pairs)
            if not item.future.done():
                item.future.set_result(
                    BatchResult(
                        result.probabilities[start:end],
                        result.labels,
                        result.model_version,
                        result.batch_size,
                    )
                )
            start = end
        if self._shadow is not None:
            try:
                self._shadow.start()
                self._shadow.offer(pairs, result)
            except Exception:  # noqa: BLE001 - the requests are answered; a copy is optional
                log.exception("shadow copy failed")

    async def aclose(self) -> None:
        """Fail the requests still waiting for a model call of this loop (the app shuts down).

        The Ray connection itself belongs to the process and stays.
        """
        if self._shadow is not None:
            await self._shadow.aclose()
        queue = self._queues.pop(asyncio.get_running_loop(), None)
        if queue is None:
            return
        if queue.timer is not None:
            queue.timer.cancel()
        error = ClassifierUnavailable("the service is shutting down")
        while queue.items:
            item = queue.items.popleft()
            if not item.future.done():
                item.future.set_exception(error)
