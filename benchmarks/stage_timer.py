"""Timers around named functions: where a request's (or a sync page's) wall time goes.

A stage is ``(label, module, attribute)``; ``attribute`` may be ``Class.method``. The
functions are replaced by timed wrappers for the duration of the ``timed_stages`` block (the
modules look them up by name at call time, so every caller is timed). Stages must not nest.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import time
from collections.abc import Iterator
from typing import Any

Stage = tuple[str, str, str]


def _timed(totals: dict[str, float], label: str, func: Any) -> Any:
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await func(*args, **kwargs)
            finally:
                totals[label] += time.perf_counter() - started

        return timed_async

    @functools.wraps(func)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - started

    return timed


@contextlib.contextmanager
def timed_stages(stages: list[Stage]) -> Iterator[dict[str, float]]:
    """Seconds spent in each stage (by label) while the block runs."""
    totals = dict.fromkeys((label for label, _, _ in stages), 0.0)
    originals = []
    for label, module_name, attribute in stages:
        owner: Any = importlib.import_module(module_name)
        name = attribute
        if "." in attribute:
            class_name, name = attribute.split(".")
            owner = getattr(owner, class_name)
        original = getattr(owner, name)
        originals.append((owner, name, original))
        setattr(owner, name, _timed(totals, label, original))
    try:
        yield totals
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
