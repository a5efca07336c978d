"""A wake-up for everything waiting inside a fake platform: each beat wakes whoever was waiting for it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Pulse:
    """Wakes every waiter at each beat, and never loses one.

    A shared `asyncio.Event` that each waiter clears before it waits loses wake-ups: a beat that lands
    between another waiter's `clear()` and the moment this one starts waiting (`asyncio.wait_for` on 3.11
    starts it only at the next loop step) is wiped out, and a held long poll sleeps through the message it
    was waiting for. Here a waiter takes the coming beat *before* it checks its condition, and each beat is
    a fresh event that nobody clears."""

    def __init__(self) -> None:
        self._coming = asyncio.Event()

    def beat(self) -> None:
        self._coming.set()
        self._coming = asyncio.Event()

    def coming(self) -> asyncio.Event:
        """The next beat; take it before checking what it should wake you for."""
        return self._coming

    async def until(self, done: Callable[[], bool]) -> None:
        """Until `done()` holds, re-checked at every beat (the caller bounds the wait)."""
        while True:
            coming = self._coming
            if done():
                return
            await coming.wait()
