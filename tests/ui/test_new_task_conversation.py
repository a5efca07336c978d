"""「新任务」 from the task list (or the tray, which asks the window for the same dialog) starts a
conversation of its own, titled after the task, and stores the request there; the conversation that was
open gets nothing. A refused task leaves no empty conversation behind.

Real host (SQLite file, agent runtime, the scripted model over real HTTP) under the real window and the
app's WindowActions, on the qasync loop."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.window_actions import WindowActions
from core.errors import ConflictError
from core.host import Host
from core.tasks import commands
from core.tasks.titles import title_from
from tests.ui.conftest import wait_until
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage
from ui.new_task_dialog import NewTaskDialog


async def stopped(host: Host) -> None:
    """Stop the host while the test still runs the loop: the task's first run may still be opening its
    session, and once the test returns, pytest-qt processes Qt events with no asyncio loop running, so
    that run's next step would fail for want of a loop. Stopping twice is safe (the fixture does it too)."""
    await host.stop()


def open_dialog() -> NewTaskDialog | None:
    shown = [w for w in QApplication.topLevelWidgets() if isinstance(w, NewTaskDialog) and w.isVisible()]
    return shown[0] if shown else None


async def new_task_from_the_task_list(window: MainWindow, title: str, brief: str) -> None:
    assert window.task_list is not None
    window.show_tasks()
    QTest.mouseClick(window.task_list.new_task_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: open_dialog() is not None, timeout=5)
    dialog = open_dialog()
    assert dialog is not None
    dialog.title_input.setText(title)
    dialog.brief_input.setPlainText(brief)
    QTest.mouseClick(dialog.create_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: open_dialog() is None, timeout=5)


async def test_a_new_task_gets_its_own_conversation_and_the_open_one_gets_nothing(
    qtbot: QtBot, qapp: QApplication, host: Host
) -> None:
    bridge = EventBridge(host.bus)
    window = MainWindow(host.chat, bridge, tasks=host.tasks, attention=host.attention, bots=host.desktop_bots)
    qtbot.addWidget(window)
    window.show()
    actions = WindowActions(host, window, qapp, bridge)
    await window.refresh()
    # Conversation A: something was said there, and it is the one open when 新任务 is pressed.
    a = await host.chat.create_conversation(title="Weekend plans")
    await host.chat.say(a.id, "What should we cook on Saturday?")
    await wait_until(lambda: window.conversation_list.conversation(a.id) is not None, timeout=5)
    window.open_conversation(a.id)
    await wait_until(
        lambda: any(isinstance(w, AssistantMessage) for w in window.chat_view.message_widgets()), timeout=10
    )
    before = [(m.role, m.text) for m in await host.chat.list_messages(a.id)]

    brief = "Compare the price of a return flight to Chengdu on three sites.\nOne table, cheapest first."
    await new_task_from_the_task_list(window, "Chengdu flights", brief)

    assert [(m.role, m.text) for m in await host.chat.list_messages(a.id)] == before
    titled = [c for c in await host.chat.list_conversations() if c.title == "Chengdu flights"]
    assert len(titled) == 1 and titled[0].id != a.id
    own = await host.chat.list_messages(titled[0].id)
    assert (own[0].role, own[0].text) == ("user", brief)
    (task,) = await host.tasks.list_tasks()
    assert (task.title, task.conversation_id) == ("Chengdu flights", titled[0].id)
    # The sidebar shows the new conversation under its title.
    await wait_until(lambda: window.conversation_list.conversation(titled[0].id) is not None, timeout=5)
    shown = window.conversation_list.conversation(titled[0].id)
    assert shown is not None and shown.title == "Chengdu flights"
    await stopped(host)
    actions.shutdown()
    window.shutdown()
    bridge.close()


async def test_without_a_title_the_conversation_is_named_after_the_first_line_cut_with_an_ellipsis(
    qtbot: QtBot, qapp: QApplication, host: Host
) -> None:
    bridge = EventBridge(host.bus)
    window = MainWindow(host.chat, bridge, tasks=host.tasks, attention=host.attention, bots=host.desktop_bots)
    qtbot.addWidget(window)
    window.show()
    actions = WindowActions(host, window, qapp, bridge)
    await window.refresh()
    brief = "Read every changelog of the last three releases and list what breaks for us\nThen advise."
    await new_task_from_the_task_list(window, "", brief)

    (task,) = await host.tasks.list_tasks()
    assert task.title == "Read every changelog of the last three…"
    assert len(task.title) <= 40
    conversation = next(c for c in await host.chat.list_conversations() if c.id == task.conversation_id)
    assert conversation.title == task.title
    await stopped(host)
    actions.shutdown()
    window.shutdown()
    bridge.close()


def test_a_short_first_line_is_the_title_as_it_is() -> None:
    assert title_from("  \nBook the dentist\nany weekday") == "Book the dentist"
    assert title_from("x" * 40) == "x" * 40
    assert title_from("x" * 41) == "x" * 39 + "…"


async def test_a_refused_task_leaves_no_empty_conversation(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "MAX_OPEN_TASKS", 0)  # the bot "already has" its open tasks
    before = [c.id for c in await host.chat.list_conversations()]
    with pytest.raises(ConflictError, match="open tasks"):
        await host.tasks.create(
            bot_id=None, words="one more", title="Too many", record_request=True, in_new_conversation=True
        )
    assert [c.id for c in await host.chat.list_conversations()] == before
    assert await host.tasks.list_tasks() == []
