"""The in-process event bus: core announces small immutable events; listeners re-read what they show."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Listener = Callable[[Any], None]


class EventBus:
    """Synchronous fan-out on the loop thread. Listeners must be cheap and must not block."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def publish(self, event: object) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                # One broken listener must not stop the others or the publisher.
                log.exception("event listener failed for %r", event)

    def queue(
        self, accept: Callable[[Any], bool] = lambda _e: True
    ) -> tuple[asyncio.Queue[Any], Callable[[], None]]:
        """An asyncio queue fed with the events `accept` lets through; returns (queue, unsubscribe)."""
        q: asyncio.Queue[Any] = asyncio.Queue()

        def put(event: Any) -> None:
            if accept(event):
                q.put_nowait(event)

        return q, self.subscribe(put)
