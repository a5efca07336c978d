"""The window over a real host: typing a message streams the model's reply and folds its steps; a healthy
host shows nothing waiting; without a model the first-run card shows until one is saved.

Real SQLite file, real agent runtime, the scripted model over real HTTP, all on the qasync loop.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QPlainTextEdit
from pytestqt.qtbot import QtBot

from app.notifications import Notifications
from app.tray import Tray
from app.window_actions import WindowActions
from core.attention.items import AttentionItem
from core.host import Host
from tests.fakes.fake_notifier import FakeNotifier
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.ui.conftest import wait_until
from tests.ui.test_chat_view import child, live_text, visible_messages
from ui.bridge import EventBridge
from ui.first_run import FirstRunCard
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage


async def test_a_typed_message_streams_a_reply_and_shows_its_steps(
    qtbot: QtBot, host: Host, model_server: ScriptedModelServer
) -> None:
    bridge = EventBridge(host.bus)
    window = MainWindow(host.chat, bridge)
    qtbot.addWidget(window)
    window.show()
    await window.refresh()

    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo 3 files"})]),
            # Slow chunks so the reply is seen streaming before it is stored.
            Reply.text("There are three files in the workspace.", chunks=8, chunk_delay_s=0.05),
        ]
    )
    composer = child(window, QPlainTextEdit, "composerInput")
    composer.setFocus()
    QTest.keyClicks(composer, "How many files?")
    QTest.keyClick(composer, Qt.Key.Key_Return)

    await wait_until(lambda: (live_text(window) or "").startswith("There are"), timeout=10)
    await wait_until(lambda: live_text(window) is None, timeout=10)
    assert visible_messages(window) == [
        ("UserMessage", "How many files?"),
        ("AssistantMessage", "There are three files in the workspace."),
    ]
    reply = window.chat_view.message_widgets()[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.activity.toggle.text().startswith("Took ")
    assert "3 steps" in reply.activity.toggle.text()
    QTest.mouseClick(reply.activity.toggle, Qt.MouseButton.LeftButton)
    steps = reply.activity.steps_list()
    assert steps is not None
    assert [row.title.text() for row in steps.rows()][1] == "bash: echo 3 files"
    window.shutdown()
    bridge.close()


async def test_a_healthy_host_shows_no_needs_you_row_and_no_badge(
    qtbot: QtBot, qapp: QApplication, host: Host
) -> None:
    bridge = EventBridge(host.bus)
    window = MainWindow(host.chat, bridge, tasks=host.tasks, attention=host.attention, bots=host.desktop_bots)
    qtbot.addWidget(window)
    window.show()
    tray = Tray(window, on_quit=lambda: None)
    notifications = Notifications(
        host.attention, host.desktop_bots, bridge, FakeNotifier(), window, lambda: False, lambda: None
    )
    counts: list[int] = []

    def on_items(items: list[AttentionItem]) -> None:
        counts.append(len(items))
        tray.set_count(len(items))

    notifications.on_items(on_items)
    await window.refresh()
    await notifications.start()

    assert counts == [0]
    assert tray.count == 0
    assert tray.tooltip() == "Errand"  # no "needs you" in it, and no badge drawn
    assert window.needs_you_button.isHidden()
    notifications.shutdown()
    window.shutdown()
    bridge.close()


async def test_the_first_run_card_shows_without_a_model_and_leaves_once_one_is_saved(
    qtbot: QtBot, qapp: QApplication, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    bare = Host(tmp_path / "bare", secrets=MemorySecretStore(), home=tmp_path / "home")
    bare.bots.presets.ollama_url = "http://127.0.0.1:9"  # nothing listens: no local preset
    await bare.start()
    bridge = EventBridge(bare.bus)
    window = MainWindow(bare.chat, bridge, tasks=bare.tasks, attention=bare.attention, bots=bare.desktop_bots)
    qtbot.addWidget(window)
    window.show()
    actions = WindowActions(bare, window, qapp, bridge)
    await window.refresh()
    await actions.check_first_run()

    card = window.shown_pane()
    assert isinstance(card, FirstRunCard)
    assert card.isVisible() and not window.chat_view.isVisible()
    card.base_url_input.setText(model_server.base_url)
    card.model_input.setCurrentText("fake-model")
    card.key_input.setText("sk-first-run")
    QTest.mouseClick(card.save_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: window.shown_pane() is window.chat_view, timeout=5)
    bot = (await bare.bots.list())[0]
    assert (bot.configured, bot.model_base_url, bot.model_name, bot.has_api_key) == (
        True,
        model_server.base_url,
        "fake-model",
        True,
    )
    await actions.check_first_run()  # configured now: the card doesn't come back
    assert window.shown_pane() is window.chat_view
    actions.shutdown()
    window.shutdown()
    bridge.close()
    await bare.stop()
