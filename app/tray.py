"""The tray icon: the needs-you count as a badge, and a menu (打开 Errand, 新任务…, 暂停后台工作, 退出).

Menu actions call what the composition root hands in, so the tray knows nothing of the window's insides
and tests need no real window. Where the desktop has no tray (offscreen, a bare X server) no icon is
created: the window stays open, closing it quits, and the app says so once (`NoTrayNote`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMainWindow, QMenu, QSystemTrayIcon, QToolButton, QWidget

from app.told_once import ToldOnce
from app.tray_badge import badge_text, badged_icon
from core.bots.facade import BotFacade
from core.bots.views import BotUpdate
from ui.assets import icon_path
from ui.async_calls import AsyncCalls
from ui.i18n import t
from ui.reloader import Reloader

log = logging.getLogger(__name__)


def app_icon() -> QIcon:
    return QIcon(str(icon_path("errand")))


def bring_forward(window: QWidget) -> None:
    if window.isMinimized():
        window.showNormal()
    else:
        window.show()
    window.raise_()
    window.activateWindow()


class Tray:
    """Wraps QSystemTrayIcon when the desktop has a tray (see `available`). The menu and its actions exist
    either way, so what they do can be checked without a tray."""

    def __init__(
        self,
        window: QWidget,
        on_quit: Callable[[], None],
        *,
        on_open: Callable[[], object] | None = None,
        on_new_task: Callable[[], object] | None = None,
        on_set_paused: Callable[[bool], object] | None = None,
        icon: QIcon | None = None,
        available: bool | None = None,
    ) -> None:
        self._window = window
        self._on_quit = on_quit
        self._on_open = on_open or (lambda: bring_forward(window))
        self._base_icon = icon or app_icon()
        self.count = 0
        # Where the last fallback message (shown by the tray itself) leads when clicked.
        self._message_click: Callable[[], None] | None = None
        self.available: bool = QSystemTrayIcon.isSystemTrayAvailable() if available is None else available

        self.menu = QMenu(window)
        self.open_action = QAction(t("tray.open"), self.menu)
        self.open_action.triggered.connect(lambda _checked=False: self.open_window())
        self.new_task_action = QAction(t("tray.new_task"), self.menu)
        self.new_task_action.setVisible(on_new_task is not None)
        if on_new_task is not None:
            self.new_task_action.triggered.connect(lambda _checked=False: on_new_task())
        self.pause_action = QAction(t("tray.pause"), self.menu)
        self.pause_action.setCheckable(True)
        self.pause_action.setVisible(on_set_paused is not None)
        if on_set_paused is not None:
            # `triggered` (not `toggled`): only a person's click pauses; `set_paused_checked` stays quiet.
            self.pause_action.triggered.connect(lambda checked: on_set_paused(bool(checked)))
        self.quit_action = QAction(t("tray.quit"), self.menu)
        self.quit_action.triggered.connect(lambda _checked=False: self._quit())
        self.menu.addAction(self.open_action)
        self.menu.addAction(self.new_task_action)
        self.menu.addSeparator()
        self.menu.addAction(self.pause_action)
        self.menu.addSeparator()
        self.menu.addAction(self.quit_action)

        self.icon: QSystemTrayIcon | None = None
        if not self.available:
            return
        self.icon = QSystemTrayIcon(self._base_icon)
        self.icon.setToolTip(self.tooltip())
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_activated)
        self.icon.messageClicked.connect(self._on_message_clicked)
        self.icon.show()

    # -- state --------------------------------------------------------------------------------------

    def set_count(self, count: int) -> None:
        """Show the needs-you count: badge and tooltip. Redrawn only when the badge would change."""
        count = max(0, count)
        redraw = badge_text(count) != badge_text(self.count)
        self.count = count
        if self.icon is None:
            return
        if redraw:
            self.icon.setIcon(self.current_icon())
        self.icon.setToolTip(self.tooltip())

    def current_icon(self) -> QIcon:
        return badged_icon(self._base_icon, self.count)

    def tooltip(self) -> str:
        return t("tray.tooltip_needs_you", count=self.count) if self.count > 0 else t("tray.tooltip")

    def set_paused_checked(self, paused: bool) -> None:
        """Reflect whether every bot is paused (read from the bots, not from the click)."""
        self.pause_action.setChecked(paused)

    def follow(self, window: QWidget) -> None:
        """The window was rebuilt in another language: the menu moves onto it (so it outlives the old one)
        and every word of the tray is said again in the language now chosen."""
        self._window = window
        self.menu.setParent(window, self.menu.windowFlags())
        self.retranslate()

    def retranslate(self) -> None:
        self.open_action.setText(t("tray.open"))
        self.new_task_action.setText(t("tray.new_task"))
        self.pause_action.setText(t("tray.pause"))
        self.quit_action.setText(t("tray.quit"))
        if self.icon is not None:
            self.icon.setToolTip(self.tooltip())

    # -- actions ------------------------------------------------------------------------------------

    def open_window(self) -> None:
        self._on_open()

    def show_message(self, title: str, body: str, on_click: Callable[[], None] | None = None) -> bool:
        """A notification shown by the tray itself (the fallback when the desktop's service fails).
        False when there is no tray to show it."""
        if self.icon is None or not QSystemTrayIcon.supportsMessages():
            return False
        self._message_click = on_click
        self.icon.showMessage(title, body, self._base_icon, 10_000)
        return True

    def hide(self) -> None:
        if self.icon is not None:
            self.icon.hide()

    def _quit(self) -> None:
        self.hide()
        self._on_quit()

    def _on_message_clicked(self) -> None:
        click, self._message_click = self._message_click, None
        if click is not None:
            click()

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        # A plain click opens the window (the context menu handles right-click on every platform).
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.open_window()


class PauseControl:
    """暂停后台工作 for every bot at once: checked when every bot is paused; a click sets all of them.
    Reads and writes go through the BotFacade on the loop; `show` gets the fresh state."""

    def __init__(self, bots: BotFacade, show: Callable[[bool], None] | None = None) -> None:
        self._bots = bots
        self.show = show
        self._calls = AsyncCalls()
        self._reader: Reloader[bool] = Reloader(self.all_paused, self._apply)

    async def all_paused(self) -> bool:
        bots = await self._bots.list()
        return bool(bots) and all(bot.paused for bot in bots)

    def refresh(self) -> asyncio.Future[None]:
        """Re-read the state (on start and whenever the bots change)."""
        return self._reader.request()

    def set_paused(self, paused: bool) -> asyncio.Task[None]:
        """A menu click: never waits on the core; the checkmark follows the bots once they changed."""
        return self._calls.start(self.apply(paused), failed=self._failed)

    async def apply(self, paused: bool) -> None:
        for bot in await self._bots.list():
            if bot.paused != paused:
                await self._bots.update(bot.id, BotUpdate(paused=paused))
        await self.refresh()

    def shutdown(self) -> None:
        self._reader.reset()
        self._calls.cancel_all()

    def _apply(self, paused: bool) -> None:
        if self.show is not None:
            self.show(paused)

    def _failed(self, exc: Exception) -> None:
        log.warning("pausing background work failed: %s", exc)
        self.refresh()  # the checkmark goes back to what the bots really are


class NoTrayNote(ToldOnce):
    """Without a tray, the window says once (ever, per data dir) that it stays open and closing it quits."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir / "ui" / "no-tray-told")

    def show_once(self, window: QMainWindow) -> QWidget | None:
        """Put a quiet, dismissable line at the bottom of the window the first time; the widget, or None
        when it was told before."""
        if self.told():
            return None
        self.mark_told()
        bar = window.statusBar()
        bar.setObjectName("noTrayBar")
        note = QWidget(bar)
        note.setObjectName("noTrayNote")
        label = QLabel(t("tray.unavailable"), note)
        label.setObjectName("noTrayText")
        label.setWordWrap(True)
        close = QToolButton(note)
        close.setObjectName("noTrayDismiss")
        close.setText(t("tray.note_dismiss"))
        close.setAutoRaise(True)
        close.setCursor(Qt.CursorShape.PointingHandCursor)
        row = QHBoxLayout(note)
        row.setContentsMargins(8, 2, 4, 2)
        row.addWidget(label, 1)
        row.addWidget(close)
        bar.addWidget(note, 1)
        bar.setSizeGripEnabled(False)
        bar.show()
        close.clicked.connect(bar.hide)
        return note
