"""A Notifier that records what would have been shown, so tests can count sends and click them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class SentNotification:
    title: str
    body: str
    on_clicked: Callable[[], None] = field(repr=False)

    def click(self) -> None:
        self.on_clicked()


class FakeNotifier:
    def __init__(self, shows: bool = True) -> None:
        self.sent: list[SentNotification] = []
        self.shows = shows  # False: as when neither the service nor a tray can show it
        self.changed = asyncio.Event()  # set on every send; a test clears it to wait for the next

    async def send(self, title: str, body: str, on_clicked: Callable[[], None]) -> bool:
        self.sent.append(SentNotification(title, body, on_clicked))
        self.changed.set()
        return self.shows
