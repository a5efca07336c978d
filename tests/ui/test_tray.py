"""Without a system tray (offscreen, bare X servers) the Tray creates nothing and says so."""

from __future__ import annotations

from PySide6.QtWidgets import QSystemTrayIcon, QWidget
from pytestqt.qtbot import QtBot

from app.tray import Tray, app_icon


def test_the_app_icon_loads() -> None:
    icon = app_icon()
    assert not icon.isNull()
    assert not icon.pixmap(22, 22).isNull()


def test_no_tray_means_nothing_is_created(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    quits: list[bool] = []
    tray = Tray(window, lambda: quits.append(True))
    assert QSystemTrayIcon.isSystemTrayAvailable() is False  # offscreen has none
    assert tray.available is False
    assert tray.icon is None and tray.menu is None
    tray.open_window()  # still brings the window forward: the caller keeps it open
    assert window.isVisible()
    assert quits == []
