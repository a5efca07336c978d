"""Re-reads one view's data on the running loop: at most one read in flight, bursts folded into one more.

Views call `request()` from signal handlers; it never blocks. A read that finishes after a newer request
is still applied (it is only a little old), and the newer read follows right after, so the view always
ends on fresh data without a flood of parallel reads racing each other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Reloader(Generic[T]):
    def __init__(
        self,
        load: Callable[[], Awaitable[T]],
        apply: Callable[[T], None],
        failed: Callable[[Exception], None] | None = None,
    ) -> None:
        self._load = load
        self._apply = apply
        self._failed = failed
        self._dirty = False
        self._task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def stale(self) -> bool:
        """While a value is applied: a newer read was asked for meanwhile and follows right after."""
        return self._dirty

    def request(self) -> asyncio.Future[None]:
        """Ask for a fresh read; the future resolves once the view shows data read after this call."""
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        # Shielded so a caller awaiting it can be cancelled without killing the shared read.
        return asyncio.shield(self._task)

    def reset(self) -> None:
        """Drop any read in flight: what it would show no longer belongs on screen."""
        self._dirty = False
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

    async def _run(self) -> None:
        while self._dirty:
            self._dirty = False
            try:
                value = await self._load()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("reading data for the UI failed")
                if self._failed is not None:
                    self._failed(exc)
                continue
            self._apply(value)
