"""The tray icon: Open brings the window forward, Quit ends the app. Absent when the desktop has no tray."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from ui.assets import icon_path
from ui.i18n import t


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
    """Wraps QSystemTrayIcon when the desktop has a tray; otherwise creates nothing (see `available`)."""

    def __init__(self, window: QWidget, on_quit: Callable[[], None]) -> None:
        self._window = window
        self._on_quit = on_quit
        self.available: bool = QSystemTrayIcon.isSystemTrayAvailable()
        self.icon: QSystemTrayIcon | None = None
        self.menu: QMenu | None = None
        if not self.available:
            return
        self.menu = QMenu()
        open_action = QAction(t("tray.open"), self.menu)
        open_action.triggered.connect(self.open_window)
        quit_action = QAction(t("tray.quit"), self.menu)
        quit_action.triggered.connect(self._quit)
        self.menu.addAction(open_action)
        self.menu.addSeparator()
        self.menu.addAction(quit_action)
        self.icon = QSystemTrayIcon(app_icon())
        self.icon.setToolTip(t("tray.tooltip"))
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_activated)
        self.icon.show()

    def open_window(self) -> None:
        bring_forward(self._window)

    def hide(self) -> None:
        if self.icon is not None:
            self.icon.hide()

    def _quit(self) -> None:
        self.hide()
        self._on_quit()

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        # A plain click opens the window (the context menu handles right-click on every platform).
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.open_window()
