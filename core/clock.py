"""Time, read only through an injected clock so tests can control it."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Wall time, monotonic time and sleeping. Core code never calls `time` or `datetime.now` itself."""

    def time(self) -> float:
        """Seconds since the epoch (wall clock)."""

    def now(self) -> datetime:
        """The wall-clock time as an aware UTC datetime."""

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps; for durations and timeouts."""

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` of this clock's time."""


class SystemClock:
    def time(self) -> float:
        return time.time()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that moves only when told to. Sleepers wake when `advance` passes their deadline."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self._wall = start
        self._mono = 1000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self._wall

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._wall, UTC)

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._order), future))
        await future

    @property
    def sleeper_count(self) -> int:
        """How many sleeps are waiting; lets a test wait until code under test has gone to sleep."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    def sleeping_for(self, seconds: float) -> bool:
        """Whether some sleep ends exactly `seconds` from now: lets a test wait for one particular sleep
        (a retry's backoff) while others (a run's time cap) are pending too."""
        return any(abs(end - self._mono - seconds) < 1e-6 for end, _, f in self._sleepers if not f.done())

    def advance(self, seconds: float) -> None:
        """Move both clocks forward and wake every sleeper whose deadline has passed."""
        self._wall += seconds
        self._mono += seconds
        while self._sleepers and self._sleepers[0][0] <= self._mono:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    def jump_wall(self, seconds: float) -> None:
        """Change only the wall clock, as a manual clock change or a suspend would appear."""
        self._wall += seconds
