"""The window as a whole: title, the conversation list, choosing and creating conversations."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QListView, QPushButton

from tests.fakes.fake_chat import FakeChatFacade
from tests.ui.conftest import wait_until
from ui.main_window import MainWindow
from ui.message_widgets import UserMessage


def titles(window: MainWindow) -> list[str]:
    view = window.findChild(QListView, "conversationList")
    assert view is not None
    model = view.model()
    return [model.index(row, 0).data() for row in range(model.rowCount())]


def shown_texts(window: MainWindow) -> list[str]:
    return [widget.text_label.text() for widget in window.chat_view.message_widgets() if widget.isVisible()]


async def test_title_and_conversation_list_most_recent_first(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    facade.add_conversation("Weekly report", "Draft is ready.", updated_at=1_000.0)
    recent = facade.add_conversation("GPU 价格调研", "好的,我来查。", updated_at=2_000.0)
    facade.add_message(recent.id, "user", "帮我查一下 GPU 价格")

    await window.refresh()

    assert "Errand" in window.windowTitle()
    view = window.findChild(QListView, "conversationList")
    assert view is not None and view.isVisible()
    assert titles(window) == ["GPU 价格调研", "Weekly report"]
    # The most recent conversation is opened at start.
    assert window.chat_view.title_label.text() == "GPU 价格调研"
    assert shown_texts(window) == ["帮我查一下 GPU 价格"]


async def test_first_start_creates_a_conversation(window: MainWindow, facade: FakeChatFacade) -> None:
    await window.refresh()

    assert titles(window) == ["New chat"]
    assert window.chat_view.title_label.text() == "New chat"
    hint = window.findChild(QLabel, "emptyHint")
    assert hint is not None and hint.isVisible()


async def test_new_chat_button_creates_and_opens_one(window: MainWindow, facade: FakeChatFacade) -> None:
    first = facade.add_conversation("Old talk")
    facade.add_message(first.id, "user", "hello")
    await window.refresh()

    button = window.findChild(QPushButton, "newChatButton")
    assert button is not None and button.text() == "New chat"
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: len(titles(window)) == 2 and window.chat_view.title_label.text() == "New chat")
    assert titles(window)[0] == "New chat"
    await wait_until(window.chat_view.hint.isVisible)
    assert shown_texts(window) == []


async def test_choosing_a_conversation_shows_its_messages(window: MainWindow, facade: FakeChatFacade) -> None:
    older = facade.add_conversation("Older", updated_at=1_000.0)
    facade.add_message(older.id, "user", "from the older one")
    newer = facade.add_conversation("Newer", updated_at=2_000.0)
    facade.add_message(newer.id, "user", "from the newer one")
    await window.refresh()
    assert shown_texts(window) == ["from the newer one"]

    view = window.findChild(QListView, "conversationList")
    assert view is not None
    rect = view.visualRect(view.model().index(1, 0))
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center()
    )

    await wait_until(lambda: shown_texts(window) == ["from the older one"])
    assert window.chat_view.title_label.text() == "Older"


async def test_a_late_read_for_the_previous_conversation_is_dropped(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    a = facade.add_conversation("A")
    facade.add_message(a.id, "user", "message in A")
    b = facade.add_conversation("B")
    facade.add_message(b.id, "user", "message in B")
    await window.refresh()
    window.conversation_list.select(a.id)
    await wait_until(lambda: shown_texts(window) == ["message in A"])

    facade.read_gate = asyncio.Event()  # reads now hang until released
    reads_before = len(facade.reads)
    facade.add_message(a.id, "user", "second in A")  # starts a read of A that will come back late
    await wait_until(lambda: len(facade.reads) > reads_before)
    window.conversation_list.select(b.id)
    facade.read_gate.set()

    await wait_until(lambda: shown_texts(window) == ["message in B"])
    assert window.chat_view.title_label.text() == "B"


async def test_busy_conversation_shows_working_in_the_list(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    conversation = facade.add_conversation("Research")
    await window.refresh()

    facade.start_live_reply(conversation.id)
    await wait_until(lambda: window.conversation_list.conversations()[0].busy)

    facade.finish_reply(conversation.id, "Done.")
    await wait_until(lambda: not window.conversation_list.conversations()[0].busy)
    assert window.conversation_list.conversations()[0].last_line == "Done."


async def test_user_messages_are_right_aligned_bubbles(window: MainWindow, facade: FakeChatFacade) -> None:
    conversation = facade.add_conversation("Chat")
    facade.add_message(conversation.id, "user", "short")
    await window.refresh()

    [bubble] = window.chat_view.message_widgets()
    assert isinstance(bubble, UserMessage)
    # The bubble hugs the right edge of the column and is no wider than its text needs.
    assert bubble.bubble.geometry().right() >= bubble.width() - 2
    assert bubble.bubble.width() < bubble.width() / 2
