"""The tray: its menu calls what it was handed, the tooltip and badge follow the needs-you count,
暂停后台工作 pauses every bot, and without a system tray the window says so once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtWidgets import QLabel, QMainWindow, QSystemTrayIcon, QToolButton, QWidget
from pytestqt.qtbot import QtBot

from app.tray import NoTrayNote, PauseControl, Tray, app_icon
from core.bots.views import BotUpdate
from tests.fakes.fake_bots import FakeBotFacade


def test_the_app_icon_loads() -> None:
    icon = app_icon()
    assert not icon.isNull()
    assert not icon.pixmap(22, 22).isNull()


def test_no_tray_means_no_icon(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    quits: list[bool] = []
    tray = Tray(window, lambda: quits.append(True))
    assert QSystemTrayIcon.isSystemTrayAvailable() is False  # offscreen has none
    assert tray.available is False
    assert tray.icon is None
    tray.open_window()  # still brings the window forward: the caller keeps it open
    assert window.isVisible()
    assert quits == []
    assert tray.show_message("t", "b") is False  # no tray to fall back on
    tray.set_count(3)  # harmless without an icon
    tray.hide()


def test_menu_actions_call_what_they_were_handed(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    calls: list[object] = []
    tray = Tray(
        window,
        lambda: calls.append("quit"),
        on_open=lambda: calls.append("open"),
        on_new_task=lambda: calls.append("new task"),
        on_set_paused=calls.append,
    )
    labels = [a.text() for a in tray.menu.actions() if not a.isSeparator()]
    assert labels == ["Open Errand", "New task…", "Pause background work", "Quit"]
    assert tray.pause_action.isCheckable() and not tray.pause_action.isChecked()
    tray.open_action.trigger()
    tray.new_task_action.trigger()
    tray.pause_action.trigger()
    tray.pause_action.trigger()
    tray.quit_action.trigger()
    assert calls == ["open", "new task", True, False, "quit"]
    tray.set_paused_checked(True)  # follows the bots, without calling anything
    assert tray.pause_action.isChecked()
    assert calls == ["open", "new task", True, False, "quit"]


def test_without_callables_the_extra_entries_are_hidden(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    tray = Tray(window, lambda: None)
    assert not tray.new_task_action.isVisible() and not tray.pause_action.isVisible()


def test_tooltip_and_icon_follow_the_count(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    tray = Tray(window, lambda: None)
    assert tray.tooltip() == "Errand"
    plain = tray.current_icon().pixmap(32, 32).toImage()
    tray.set_count(3)
    assert tray.tooltip() == "Errand · Needs you 3"
    assert tray.current_icon().pixmap(32, 32).toImage() != plain
    tray.set_count(0)
    assert tray.tooltip() == "Errand"
    assert tray.current_icon().pixmap(32, 32).toImage() == plain


async def test_pause_sets_every_bot_and_the_checkmark_follows() -> None:
    bots = FakeBotFacade()
    bots.add("天天")
    bots.add("小帮")
    shown: list[bool] = []
    control = PauseControl(bots, shown.append)
    await control.refresh()
    assert shown == [False]

    await control.set_paused(True)
    assert [b.paused for b in await bots.list()] == [True, True]
    assert shown[-1] is True

    await control.set_paused(False)
    assert [b.paused for b in await bots.list()] == [False, False]
    assert shown[-1] is False

    # Checked only when every bot is paused; a click changes only the bots that differ.
    first = (await bots.list())[0]
    await control.apply(True)
    bots.updates.clear()
    await bots.update(first.id, BotUpdate(paused=False))
    await control.refresh()
    assert shown[-1] is False
    await control.apply(True)
    assert [u.paused for _, u in bots.updates] == [False, True]
    control.shutdown()


async def test_a_failed_pause_shows_the_real_state_again() -> None:
    bots = FakeBotFacade()
    bots.add("天天")
    shown: list[bool] = []
    control = PauseControl(bots, shown.append)
    bots.update_error = RuntimeError("store is gone")
    task = control.set_paused(True)
    await asyncio.wait([task])
    await control.refresh()
    assert shown[-1] is False
    control.shutdown()


def test_the_no_tray_note_appears_once_across_two_starts(qtbot: QtBot, tmp_path: Path) -> None:
    first = QMainWindow()
    qtbot.addWidget(first)
    first.show()
    note = NoTrayNote(tmp_path).show_once(first)
    assert note is not None
    [label] = note.findChildren(QLabel)
    assert "No system tray" in label.text()
    assert first.statusBar().isVisible()
    [dismiss] = note.findChildren(QToolButton)
    dismiss.click()
    assert not first.statusBar().isVisible()

    second = QMainWindow()  # the next start, same data dir
    qtbot.addWidget(second)
    second.show()
    assert NoTrayNote(tmp_path).show_once(second) is None
    assert NoTrayNote(tmp_path).told()
