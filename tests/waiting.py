"""Waiting on conditions in tests without sleeping: re-check when an event arrives, fail after a timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from core.bus import EventBus


async def wait_for_event(bus: EventBus, accept: Callable[[Any], bool], timeout: float = 5.0) -> Any:
    """The first event on `bus` that `accept` lets through."""
    queue, unsubscribe = bus.queue(accept)
    try:
        return await asyncio.wait_for(queue.get(), timeout)
    finally:
        unsubscribe()


async def wait_until(
    bus: EventBus, condition: Callable[[], Awaitable[bool]], timeout: float = 5.0, what: str = "condition"
) -> None:
    """Wait until the async `condition` holds, re-checking after every event published on `bus`."""
    queue, unsubscribe = bus.queue()
    try:
        async with asyncio.timeout(timeout):
            while not await condition():
                await queue.get()
                while not queue.empty():  # a burst of events needs only one re-check
                    queue.get_nowait()
    except TimeoutError:
        raise TimeoutError(f"timed out after {timeout}s waiting for {what}") from None
    finally:
        unsubscribe()


async def yield_until(predicate: Callable[[], bool], what: str = "condition", rounds: int = 10_000) -> None:
    """Let the loop run until `predicate` holds, for code with no event to wait on (a sleeper on the fake
    clock, a task finishing): yield a bounded number of times, never sleeping."""
    for _ in range(rounds):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")
