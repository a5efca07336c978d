"""Fire-and-forget facade commands from Qt slots, run on the qasync loop.

Slots cannot await, so a command becomes a task. The tasks are kept referenced here (asyncio keeps only
weak references), failures are logged or handed to a callback, and closing the owner cancels them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class AsyncCalls:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(
        self,
        coro: Coroutine[Any, Any, T],
        done: Callable[[T], None] | None = None,
        failed: Callable[[Exception], None] | None = None,
    ) -> asyncio.Task[T]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)

        def finished(t: asyncio.Task[T]) -> None:
            self._tasks.discard(t)
            if t.cancelled():
                return
            exc = t.exception()
            if exc is None:
                if done is not None:
                    done(t.result())
            elif isinstance(exc, Exception) and failed is not None:
                failed(exc)
            else:
                log.error("UI command failed", exc_info=exc)

        task.add_done_callback(finished)
        return task

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def wait_all(self) -> None:
        """Wait until every call started so far has finished (failures are handled as usual)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks))

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        self._tasks.clear()
