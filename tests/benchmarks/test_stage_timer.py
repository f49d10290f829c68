"""The stage timer: each stage's own time (stages inside it left out), on the timing thread only,
and the timed functions put back afterwards. A fake clock: no real time is measured."""

from __future__ import annotations

import asyncio
import sys
import threading
from types import SimpleNamespace

import pytest

from benchmarks import stage_timer
from benchmarks.stage_timer import timed_stages

MODULE = __name__


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


CLOCK = FakeClock()


def inner() -> None:
    CLOCK.advance(2.0)


def outer() -> None:
    CLOCK.advance(1.0)
    inner()
    CLOCK.advance(0.5)


async def inner_async() -> None:
    await asyncio.sleep(0)
    CLOCK.advance(3.0)


async def outer_async() -> None:
    CLOCK.advance(1.0)
    await inner_async()


class Base:
    def method(self) -> str:
        CLOCK.advance(4.0)
        return "base"


class Derived(Base):
    pass


STAGES = [("outer", MODULE, "outer"), ("inner", MODULE, "inner")]


@pytest.fixture(autouse=True)
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    CLOCK.now = 0.0
    # The fake clock stands for both: each stage's CPU time equals its wall time here.
    fake = SimpleNamespace(perf_counter=CLOCK.perf_counter, thread_time=CLOCK.perf_counter)
    monkeypatch.setattr(stage_timer, "time", fake)


def test_a_stage_inside_another_counts_once_in_the_inner_stage() -> None:
    cpu: dict[str, float] = {}
    with timed_stages(STAGES, cpu) as totals:
        outer()
        inner()
    assert totals == cpu == {"outer": 1.5, "inner": 4.0}


def test_async_stages_nest_the_same_way() -> None:
    stages = [("outer", MODULE, "outer_async"), ("inner", MODULE, "inner_async")]
    with timed_stages(stages) as totals:
        asyncio.run(outer_async())
    assert totals == {"outer": 1.0, "inner": 3.0}


def test_calls_on_another_thread_are_not_timed() -> None:
    with timed_stages(STAGES) as totals:
        thread = threading.Thread(target=outer)
        thread.start()
        thread.join()
    assert totals == {"outer": 0.0, "inner": 0.0}
    assert CLOCK.now == 3.5  # it ran, untimed


def test_the_functions_are_put_back_and_an_inherited_method_is_not_copied() -> None:
    module = sys.modules[MODULE]
    originals = (module.outer, module.inner)
    with timed_stages([*STAGES, ("method", MODULE, "Derived.method")]) as totals:
        assert Derived().method() == "base"
        assert module.outer is not originals[0]
    assert totals["method"] == 4.0
    assert (module.outer, module.inner) == originals
    assert "method" not in vars(Derived) and Derived.method is Base.method
