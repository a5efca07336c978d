"""A language change applies at once: the main window is built again in the new language and takes the old
one's place, where it stood, showing what the old one showed.

Rebuilding rather than retranslating widget by widget: every label, menu and placeholder is read through
`t()` when a widget is built, so a fresh window cannot miss one. The parts around the window (tray,
notifications, the window's dialogs) are told through `on_replaced` so they follow the new one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QSplitter

from ui.i18n import Language, use_language
from ui.main_window import MainWindow

log = logging.getLogger(__name__)


def chosen_language(choice: str) -> Language | None:
    """The language of a stored choice: 'zh' / 'en' pin one; 'auto' (or anything else) follows the system."""
    if choice == "zh":
        return "zh"
    if choice == "en":
        return "en"
    return None


@dataclass(frozen=True)
class WindowPlace:
    """Where a window stood and what it showed, to be put back on its successor."""

    geometry: QRect
    state: Qt.WindowState
    visible: bool
    splitter_sizes: list[int]
    conversation_id: str | None
    pane: str  # "chat", "tasks", "task", "needs"
    task_id: str | None
    task_back_to: str
    panel_open: bool
    panel_bot_id: str | None
    draft: str
    query: str

    @classmethod
    def of(cls, window: MainWindow) -> WindowPlace:
        shown = window.shown_pane()
        detail = window.task_detail
        pane = "chat"
        if shown is window.task_list:
            pane = "tasks"
        elif detail is not None and shown is detail:
            pane = "task"
        elif shown is window.needs_you:
            pane = "needs"
        splitter = window.findChild(QSplitter, "mainSplitter")
        return cls(
            geometry=window.geometry(),
            state=window.windowState(),
            visible=window.isVisible(),
            splitter_sizes=splitter.sizes() if splitter is not None else [],
            conversation_id=window.conversation_list.current_id,
            pane=pane,
            task_id=detail.task_id if detail is not None else None,
            task_back_to=detail.back_to if detail is not None else "chat",
            panel_open=window.panel_button is not None and window.panel_button.isChecked(),
            panel_bot_id=window.bot_panel.bot_id if window.bot_panel is not None else None,
            draft=window.chat_view.composer.text(),
            query=window.search.text(),
        )

    def put_geometry(self, window: MainWindow) -> None:
        # The frame and size as they are now (restoreGeometry would fit them to a screen they may exceed).
        window.setGeometry(self.geometry)
        window.setWindowState(self.state)

    def put_content(self, window: MainWindow) -> None:
        """Once the window has read its data: the same conversation, pane, panel, draft and search."""
        if self.query:
            window.search.setText(self.query)
        if self.conversation_id is not None:
            window.open_conversation(self.conversation_id)
        if self.draft:
            window.chat_view.composer.set_text(self.draft)
        if self.panel_open:
            window.show_bot_panel(self.panel_bot_id or "")
        if self.pane == "tasks":
            window.show_tasks()
        elif self.pane == "task" and self.task_id is not None:
            window.open_task(self.task_id, back_to=self.task_back_to)
        elif self.pane == "needs":
            window.show_needs_you()
        splitter = window.findChild(QSplitter, "mainSplitter")
        if splitter is not None and len(self.splitter_sizes) == splitter.count():
            splitter.setSizes(self.splitter_sizes)


class LiveLanguage:
    """Holds the app's main window and rebuilds it when the language changes.

    `build` makes a window over the host's facades; `on_replaced` listeners (the desktop parts, the window
    actions) are handed each new window before the old one goes."""

    def __init__(self, build: Callable[[], MainWindow], window: MainWindow | None = None) -> None:
        self._build = build
        self.window = window or build()
        self._listeners: list[Callable[[MainWindow], None]] = []
        self.refreshed = False  # the first refresh is done: a rebuilt window reads its data at once

    def on_replaced(self, listener: Callable[[MainWindow], None]) -> None:
        self._listeners.append(listener)

    async def switch(self, choice: str) -> MainWindow:
        """Use the language of `choice` ('zh', 'en' or 'auto') and put a window in it in the old one's
        place. The new window reads its data before it is shown, so it never appears half empty."""
        use_language(chosen_language(choice))
        old = self.window
        place = WindowPlace.of(old)
        new = self._build()
        place.put_geometry(new)
        self.window = new
        for listener in self._listeners:
            listener(new)
        if self.refreshed:
            try:
                await new.refresh()
            except Exception:
                log.exception("the rebuilt window could not read its data")
            place.put_content(new)
        if place.visible:
            new.show()
            new.raise_()
            new.activateWindow()
        old.hide()
        old.shutdown()
        old.deleteLater()
        log.info("language now %s: window rebuilt", choice)
        return new
