"""One bot's list of something (its rules, its channels), read while a view shows it: `changed` when what
it would show differs, `failed(text)` when a read failed, in words for the view's notice. Switching the
bot drops what an older read brings back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from PySide6.QtCore import QObject, Signal

from ui.answer_bar import reason
from ui.i18n import t
from ui.reloader import Reloader

T = TypeVar("T")


class BotScopedList(QObject, Generic[T]):
    changed = Signal()
    failed = Signal(str)

    def __init__(
        self, load: Callable[[str], Awaitable[list[T]]], failed_key: str, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._read = load
        self._failed_key = failed_key  # a catalogue key that takes {reason}
        self._bot_id: str | None = None
        self.views: list[T] = []
        self._reader: Reloader[tuple[str, list[T]]] = Reloader(self._load, self._apply, self._fail)

    def set_bot(self, bot_id: str | None) -> None:
        if bot_id != self._bot_id:
            self._bot_id = bot_id
            self._reader.reset()
            if self.views:
                self.views = []
                self.changed.emit()

    def request(self) -> asyncio.Future[None] | None:
        """Read again; the future resolves once the result was applied (None without a bot)."""
        if self._bot_id is None:
            return None
        return self._reader.request()

    def reset(self) -> None:
        self._reader.reset()

    async def _load(self) -> tuple[str, list[T]]:
        bot_id = self._bot_id
        if bot_id is None:
            return "", []
        return bot_id, await self._read(bot_id)

    def _apply(self, result: tuple[str, list[T]]) -> None:
        bot_id, views = result
        if bot_id != self._bot_id or views == self.views:
            return
        self.views = views
        self.changed.emit()

    def _fail(self, exc: Exception) -> None:
        self.failed.emit(t(self._failed_key, reason=reason(exc)))
