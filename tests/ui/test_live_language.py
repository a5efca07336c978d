"""A language saved in app settings applies at once (issue 17): the window is built again in it, where it
stood, with the same conversation open, and the tray's menu speaks it too. No restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot
from shiboken6 import isValid

from app.gui import _Desktop, _live_window
from app.window_actions import WindowActions
from core.host import Host
from tests.fakes.model_server import ScriptedModelServer
from tests.integration.host_fixtures import make_host
from tests.ui.conftest import wait_until
from ui import i18n
from ui.app_settings import AppSettingsDialog
from ui.bridge import EventBridge
from ui.main_window import MainWindow


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    async with ScriptedModelServer() as server:
        made = make_host(tmp_path / "data", server.base_url, home=tmp_path / "home")
        await made.start()
        yield made
        await made.stop()


def shiboken_deleted(widget: MainWindow) -> bool:
    return not isValid(widget)


def app_settings(window: MainWindow) -> AppSettingsDialog | None:
    found = window.findChild(AppSettingsDialog)
    return found if isinstance(found, AppSettingsDialog) and found.isVisible() else None


async def test_saving_chinese_rebuilds_the_window_in_chinese_with_the_same_conversation_open(
    qtbot: QtBot, qapp: QApplication, host: Host, tmp_path: Path
) -> None:
    bridge = EventBridge(host.bus)
    live = _live_window(host, bridge)
    old = live.window
    desktop = _Desktop(tmp_path / "data", host.desktop_bots, bridge, old, lambda: None)
    actions = WindowActions(host, old, qapp, bridge, switch_language=live.switch)
    live.on_replaced(desktop.use_window)
    live.on_replaced(actions.use_window)
    old.show()
    old.resize(1000, 650)
    await old.refresh()
    live.refreshed = True
    # Two conversations; the older one is open (not the one a fresh window would pick by itself).
    first = old.conversation_list.current_id
    assert first is not None
    await host.chat.create_conversation()
    await wait_until(lambda: len(old.conversation_list.conversations()) == 2)
    old.open_conversation(first)
    old.chat_view.composer.set_text("半句话")
    assert old.new_chat_button.text() == "New chat"
    assert desktop.tray.open_action.text() == "Open Errand"

    size = old.size()
    old.appSettingsRequested.emit()
    await wait_until(lambda: (d := app_settings(old)) is not None and d.save_button.isEnabled())
    dialog = app_settings(old)
    assert dialog is not None
    assert dialog.findChild(QWidget, "restartNote") is None  # nothing says "after a restart" any more
    dialog.language_combo.setCurrentIndex(dialog.language_combo.findData("zh"))
    dialog.save_button.click()

    await wait_until(lambda: live.window is not old and live.window.isVisible(), timeout=5)
    new = live.window
    await wait_until(lambda: shiboken_deleted(old))  # the old window is gone, not only hidden
    assert i18n.language() == "zh"
    assert new.new_chat_button.text() == "新对话"
    assert new.tasks_button.text() == "任务"
    assert desktop.window is new
    assert desktop.tray.open_action.text() == "打开 Errand"
    assert desktop.tray.quit_action.text() == "退出"
    assert desktop.tray.menu.parent() is new
    # Where it stood, and what it showed.
    assert new.size() == size
    assert new.conversation_list.current_id == first
    assert new.chat_view.conversation_id == first
    assert new.chat_view.composer.text() == "半句话"
    assert (await host.preferences.preferences()).language == "zh"

    # The window's actions follow the new window: its gear opens settings, now in Chinese.
    new.appSettingsRequested.emit()
    await wait_until(lambda: app_settings(new) is not None)
    again = app_settings(new)
    assert again is not None and again.windowTitle() == i18n.t("settings.app.title")
    again.reject()

    actions.shutdown()
    await desktop.stop()
    bridge.close()
    new.hide()  # hidden first: deleting the last shown window would quit the app (and stop the loop)
    new.shutdown()
    new.deleteLater()


async def test_auto_follows_the_system_language(qtbot: QtBot, qapp: QApplication, host: Host) -> None:
    i18n.use_language("zh")
    bridge = EventBridge(host.bus)
    live = _live_window(host, bridge)
    live.window.show()
    await live.window.refresh()
    live.refreshed = True
    new = await live.switch("auto")
    assert i18n.language() == i18n.system_language() == "en"  # the tests' system (ERRAND_LANG=en)
    assert new.new_chat_button.text() == "New chat"
    bridge.close()
    new.hide()  # hidden first: deleting the last shown window would quit the app (and stop the loop)
    new.shutdown()
    new.deleteLater()
