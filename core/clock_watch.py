"""Noticing that time jumped: the machine slept, or someone changed the clock.

Both look the same from inside the process: wall-clock time moved by a different amount than monotonic
time (a suspend stops the monotonic clock on Linux; a clock change moves only the wall clock). Either way
every time-based decision must be looked at again, so both end in one `Host.resync`.

Pure asyncio: works under `errand serve` as well as on the Qt loop, and reads time only through the clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from core.clock import Clock

log = logging.getLogger(__name__)

Resync = Callable[[str], Awaitable[None]]


class ClockJumpWatcher:
    """Every `interval_s`, compares how far the wall clock and the monotonic clock moved; calls
    `on_jump("clock")` when they differ by more than `tolerance_s`."""

    def __init__(
        self, clock: Clock, on_jump: Resync, interval_s: float = 5.0, tolerance_s: float = 2.0
    ) -> None:
        if interval_s <= 0 or tolerance_s <= 0:
            raise ValueError("interval_s and tolerance_s must be positive")
        self._clock = clock
        self._on_jump = on_jump
        self._interval_s = interval_s
        self._tolerance_s = tolerance_s
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running:
            return
        self._task = asyncio.get_running_loop().create_task(self._watch(), name="clock-jump-watcher")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _watch(self) -> None:
        wall, mono = self._clock.time(), self._clock.monotonic()
        while True:
            await self._clock.sleep(self._interval_s)
            now_wall, now_mono = self._clock.time(), self._clock.monotonic()
            drift = (now_wall - wall) - (now_mono - mono)
            # Re-baseline before calling out: a slow resync must not itself look like a jump next time.
            wall, mono = now_wall, now_mono
            if abs(drift) > self._tolerance_s:
                log.info("the wall clock moved %.1f s more than the monotonic clock", drift)
                try:
                    await self._on_jump("clock")
                except Exception:
                    log.exception("resync after a clock jump failed")
                wall, mono = self._clock.time(), self._clock.monotonic()


class CoalescedResync:
    """One resync per wake: after a suspend the sleep signal ("resume") and the drift watcher ("clock")
    both fire within seconds of each other; only the first within `window_s` (monotonic) goes through."""

    def __init__(self, resync: Resync, clock: Clock, window_s: float = 10.0) -> None:
        self._resync = resync
        self._clock = clock
        self._window_s = window_s
        self._last: float | None = None
        self.count = 0  # resyncs that went through, for logs and tests

    async def __call__(self, reason: str) -> None:
        now = self._clock.monotonic()
        if self._last is not None and now - self._last < self._window_s:
            log.debug("resync after %s folded into the one just done", reason)
            return
        self._last = now
        self.count += 1
        await self._resync(reason)
