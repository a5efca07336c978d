"""重试 on a failed reply, as a person meets it: the latest failed reply carries the button (and the entry
in its right-click menu); clicking it asks again once, the failed reply goes and the new one shows; a
refusal is said under the error and the button comes back."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPlainTextEdit, QWidget
from pytestqt.qtbot import QtBot

from core.errors import ConflictError
from core.host import Host
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.ui.conftest import wait_until
from tests.ui.test_chat_view import child, live_text, open_chat, visible_messages
from ui.async_calls import AsyncCalls
from ui.bridge import EventBridge
from ui.i18n import t
from ui.main_window import MainWindow
from ui.message_widgets import ErrorMessage, message_widget
from ui.reply_retry import wire_retry


def click(widget: QWidget) -> None:
    QTest.mouseClick(widget, Qt.MouseButton.LeftButton)


def error_row(facade: FakeChatFacade, cid: str, qtbot: QtBot, *, retryable: bool = True) -> ErrorMessage:
    view = (
        facade.fail_reply(cid, "The model rejected the API key.")
        if retryable
        else facade.add_message(cid, "error", "The model rejected the API key.", state="error")
    )
    row = message_widget(view)
    assert isinstance(row, ErrorMessage)
    qtbot.addWidget(row)
    row.show()
    return row


async def test_the_latest_failed_reply_offers_retry_in_its_head_and_menu(
    qtbot: QtBot, facade: FakeChatFacade
) -> None:
    cid = facade.add_conversation("Chat").id
    row = error_row(facade, cid, qtbot)
    assert row.retry_button is not None and row.retry_button.isVisible()
    assert row.retry_button.text() == t("message.retry")
    assert t("message.retry") in [a.text() for a in row.menu().actions()]

    older = error_row(facade, cid, qtbot, retryable=False)
    assert older.retry_button is None
    assert t("message.retry") not in [a.text() for a in older.menu().actions()]


async def test_clicking_retry_asks_once_and_a_refusal_is_said(qtbot: QtBot, facade: FakeChatFacade) -> None:
    cid = facade.add_conversation("Chat").id
    row = error_row(facade, cid, qtbot)
    reread: list[str] = []
    calls = AsyncCalls()
    wire_retry(row, facade, calls, reread.append)
    facade.retry_error = ConflictError("busy", key="error.retry.busy")

    assert row.retry_button is not None
    click(row.retry_button)
    click(row.retry_button)  # a second click while the first is on its way does nothing
    await wait_until(row.retry_error.isVisible)
    assert facade.retried == [(cid, row.view.id)]
    assert "retry once it has finished" in row.retry_error.text()
    assert row.retry_button.isEnabled() and row.retry_button.text() == t("message.retry")
    assert reread == []

    facade.retry_error = None
    click(row.retry_button)
    await wait_until(lambda: reread == [cid])
    assert facade.retried == [(cid, row.view.id)] * 2
    assert not row.retry_error.isVisible()


async def test_retry_in_the_window_shows_the_new_reply(window: MainWindow, facade: FakeChatFacade) -> None:
    cid = await open_chat(window, facade)
    facade.add_message(cid, "user", "What is 6*7?", state="answered")
    failed = facade.fail_reply(cid, "The model rejected the API key.")
    await wait_until(lambda: len(visible_messages(window)) == 2)
    row = window.chat_view.message_widgets()[-1]
    assert isinstance(row, ErrorMessage) and row.retry_button is not None

    click(row.retry_button)
    await wait_until(lambda: facade.retried == [(cid, failed.id)])
    await wait_until(lambda: visible_messages(window) == [("UserMessage", "What is 6*7?")])
    facade.finish_reply(cid, "It is 42.")
    await wait_until(
        lambda: (
            visible_messages(window) == [("UserMessage", "What is 6*7?"), ("AssistantMessage", "It is 42.")]
        )
    )


async def test_retry_over_a_real_host_asks_the_model_again(
    qtbot: QtBot, host: Host, model_server: ScriptedModelServer
) -> None:
    bridge = EventBridge(host.bus)
    window = MainWindow(host.chat, bridge)
    qtbot.addWidget(window)
    window.show()
    await window.refresh()
    model_server.push_many([Reply.error(401, message="Incorrect API key provided"), Reply.text("It is 42.")])
    composer = child(window, QPlainTextEdit, "composerInput")
    composer.setFocus()
    QTest.keyClicks(composer, "What is 6*7?")
    QTest.keyClick(composer, Qt.Key.Key_Return)
    await wait_until(lambda: [k for k, _ in visible_messages(window)] == ["UserMessage", "ErrorMessage"], 10)
    row = window.chat_view.message_widgets()[-1]
    assert isinstance(row, ErrorMessage) and row.retry_button is not None

    click(row.retry_button)
    await wait_until(
        lambda: (
            visible_messages(window) == [("UserMessage", "What is 6*7?"), ("AssistantMessage", "It is 42.")]
        ),
        10,
    )
    await wait_until(lambda: live_text(window) is None, 10)
    retried = model_server.requests[-1]
    assert [m["content"] for m in retried.messages if m["role"] == "user"] == ["What is 6*7?"]
    await host.chat.drain()
    window.shutdown()
    bridge.close()
