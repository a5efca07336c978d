"""The clock-jump watcher: a wall-clock jump (a manual change, or a suspend) triggers one resync; steady
time triggers none. Driven by the fake clock: no real sleeps."""

from __future__ import annotations

import asyncio

from core.clock import FakeClock
from core.clock_watch import ClockJumpWatcher, CoalescedResync


class Calls:
    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.changed = asyncio.Event()

    async def __call__(self, reason: str) -> None:
        self.reasons.append(reason)
        self.changed.set()


async def asleep(clock: FakeClock, count: int = 1) -> None:
    """Until the watcher has gone to sleep on the fake clock (it has looked at the time). It has no event
    to wait on, so yield to the loop a bounded number of times."""
    for _ in range(10_000):
        if clock.sleeper_count >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError("the watcher never went to sleep on the fake clock")


async def tick(clock: FakeClock, seconds: float) -> None:
    """Let the watcher wake once and go back to sleep."""
    await asleep(clock)
    clock.advance(seconds)
    await asyncio.sleep(0)
    await asleep(clock)


async def test_steady_time_triggers_nothing() -> None:
    clock = FakeClock()
    calls = Calls()
    watcher = ClockJumpWatcher(clock, calls, interval_s=5, tolerance_s=2)
    watcher.start()
    for _ in range(20):
        await tick(clock, 5)
    assert calls.reasons == []
    await watcher.stop()
    assert not watcher.running


async def test_a_wall_clock_jump_triggers_one_resync() -> None:
    clock = FakeClock()
    calls = Calls()
    watcher = ClockJumpWatcher(clock, calls, interval_s=5, tolerance_s=2)
    watcher.start()
    await tick(clock, 5)
    await asleep(clock)
    clock.jump_wall(3600)  # someone set the clock an hour ahead
    clock.advance(5)
    await calls.changed.wait()
    assert calls.reasons == ["clock"]
    for _ in range(5):
        await tick(clock, 5)
    assert calls.reasons == ["clock"]
    await watcher.stop()


async def test_a_backward_jump_counts_too() -> None:
    clock = FakeClock()
    calls = Calls()
    watcher = ClockJumpWatcher(clock, calls, interval_s=5, tolerance_s=2)
    watcher.start()
    await asleep(clock)
    clock.jump_wall(-600)
    clock.advance(5)
    await calls.changed.wait()
    assert calls.reasons == ["clock"]
    await watcher.stop()


async def test_small_drift_within_tolerance_is_ignored() -> None:
    clock = FakeClock()
    calls = Calls()
    watcher = ClockJumpWatcher(clock, calls, interval_s=5, tolerance_s=2)
    watcher.start()
    await asleep(clock)
    clock.jump_wall(1.5)  # NTP slewing a little
    await tick(clock, 5)
    await tick(clock, 5)
    assert calls.reasons == []
    await watcher.stop()


async def test_resume_and_clock_in_the_same_wake_make_one_resync() -> None:
    clock = FakeClock()
    calls = Calls()
    once = CoalescedResync(calls, clock, window_s=10)
    await once("resume")
    clock.advance(3)
    await once("clock")
    assert calls.reasons == ["resume"]
    clock.advance(60)
    await once("clock")
    assert calls.reasons == ["resume", "clock"]
    assert once.count == 2


async def test_stop_is_safe_before_start_and_twice() -> None:
    watcher = ClockJumpWatcher(FakeClock(), Calls())
    await watcher.stop()
    watcher.start()
    await watcher.stop()
    await watcher.stop()
