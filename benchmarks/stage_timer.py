"""Timers around named functions: where a request's (or a sync page's) wall time goes.

A stage is ``(label, module, attribute)``; ``attribute`` may be ``Class.method``. The
functions are replaced by timed wrappers for the duration of the ``timed_stages`` block (the
modules look them up by name at call time, so every caller is timed). Only calls on the thread
that opened the block are timed: a background thread's work overlaps the timed thread's and
would count twice. A stage may run inside another: each stage's total is its own time, the
stages inside it left out (tracked per asyncio task, so concurrent requests do not mix). Given
a ``cpu`` dict, the block also sums each stage's own CPU time on that thread into it: the
difference to its wall time is waiting (a round trip, another process on the CPU).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import inspect
import threading
import time
from collections.abc import Iterator
from typing import Any

Stage = tuple[str, str, str]


class _Entry:
    """A stage under way: when it started, and the time spent in stages inside it (wall and
    the thread's CPU)."""

    __slots__ = ("cpu_inner", "cpu_started", "inner", "label", "started")

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.perf_counter()
        self.cpu_started = time.thread_time()
        self.inner = 0.0
        self.cpu_inner = 0.0


# The innermost stage under way in this task (or thread), None outside every stage.
_current: contextvars.ContextVar[_Entry | None] = contextvars.ContextVar(
    "stage_timer_current", default=None
)


class _Clock:
    def __init__(self, labels: list[str], cpu: dict[str, float]) -> None:
        self.totals = dict.fromkeys(labels, 0.0)
        self.cpu = cpu
        self.cpu.update(dict.fromkeys(labels, 0.0))
        self.thread = threading.get_ident()

    @contextlib.contextmanager
    def stage(self, label: str) -> Iterator[None]:
        if threading.get_ident() != self.thread:
            yield
            return
        outer = _current.get()
        entry = _Entry(label)
        token = _current.set(entry)
        try:
            yield
        finally:
            _current.reset(token)
            elapsed = time.perf_counter() - entry.started
            cpu = time.thread_time() - entry.cpu_started
            self.totals[label] += elapsed - entry.inner
            self.cpu[label] += cpu - entry.cpu_inner
            if outer is not None:
                outer.inner += elapsed
                outer.cpu_inner += cpu


def _timed(clock: _Clock, label: str, func: Any) -> Any:
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            with clock.stage(label):
                return await func(*args, **kwargs)

        return timed_async

    @functools.wraps(func)
    def timed(*args: Any, **kwargs: Any) -> Any:
        with clock.stage(label):
            return func(*args, **kwargs)

    return timed


@contextlib.contextmanager
def timed_stages(
    stages: list[Stage], cpu: dict[str, float] | None = None
) -> Iterator[dict[str, float]]:
    """Seconds spent in each stage (by label, its own time) while the block runs; its CPU
    seconds go into ``cpu`` when given."""
    clock = _Clock([label for label, _, _ in stages], cpu if cpu is not None else {})
    patched: list[tuple[Any, str, Any]] = []  # (owner, name, its own attribute or None)
    try:
        for label, module_name, attribute in stages:
            owner: Any = importlib.import_module(module_name)
            name = attribute
            if "." in attribute:
                class_name, name = attribute.split(".")
                owner = getattr(owner, class_name)
            # A class may inherit the method: restoring must not leave a copy on the class.
            patched.append((owner, name, vars(owner).get(name)))
            setattr(owner, name, _timed(clock, label, getattr(owner, name)))
        yield clock.totals
    finally:
        for owner, name, own in reversed(patched):
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)
