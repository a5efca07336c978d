"""The conversation pane as a user meets it: sending, streaming, folded steps, errors, stopping."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton, QWidget

from core.activity_steps import ActivityStep
from tests.fakes.fake_chat import FakeChatFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.activity_view import ActivityView
from ui.live_reply import LiveReplyWidget
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage, ErrorMessage, MarkdownLabel, NoticeMessage

STEPS = (
    ActivityStep("model", "Plan the lookup", duration_ms=800, tokens_in=1200, tokens_out=210),
    ActivityStep(
        "tool", "web_fetch https://example.com/prices", detail="200 OK\n<html>" + "x" * 500, duration_ms=1100
    ),
    ActivityStep("tool", "read_file notes.md", detail="No such file", ok=False, duration_ms=40),
    ActivityStep("model", "Write the answer", duration_ms=1260, tokens_in=2400, tokens_out=380),
)


async def open_chat(window: MainWindow, facade: FakeChatFacade) -> str:
    conversation = facade.add_conversation("Chat")
    await window.refresh()
    return conversation.id


W = TypeVar("W", bound=QWidget)


def child(window: MainWindow, kind: type[W], name: str) -> W:
    found = window.findChild(kind, name)
    assert isinstance(found, kind), name
    return found


def visible_messages(window: MainWindow) -> list[tuple[str, str]]:
    shown = []
    for widget in window.chat_view.message_widgets():
        if not widget.isVisible():
            continue
        label = widget.text_label
        text = label.plain_text() if isinstance(label, MarkdownLabel) else label.text()
        shown.append((type(widget).__name__, text))
    return shown


def live_text(window: MainWindow) -> str | None:
    live = child(window, LiveReplyWidget, "liveReply")
    assert isinstance(live, LiveReplyWidget)
    return live.body.plain_text() if live.isVisible() else None


async def test_enter_sends_the_text_and_clears_the_input(window: MainWindow, facade: FakeChatFacade) -> None:
    cid = await open_chat(window, facade)
    composer = child(window, QPlainTextEdit, "composerInput")
    assert isinstance(composer, QPlainTextEdit)

    QTest.keyClicks(composer, "Compare GPU prices")
    QTest.keyClick(composer, Qt.Key.Key_Return)

    assert composer.toPlainText() == ""
    await wait_until(lambda: facade.said == [(cid, "Compare GPU prices")])
    await wait_until(lambda: visible_messages(window) == [("UserMessage", "Compare GPU prices")])


async def test_empty_input_sends_nothing_and_shift_enter_breaks_the_line(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    cid = await open_chat(window, facade)
    composer = child(window, QPlainTextEdit, "composerInput")
    assert isinstance(composer, QPlainTextEdit)
    send = child(window, QPushButton, "sendButton")

    QTest.keyClick(composer, Qt.Key.Key_Return)  # empty
    QTest.keyClicks(composer, "   ")
    QTest.keyClick(composer, Qt.Key.Key_Return)  # whitespace only
    assert composer.toPlainText() == "   "
    assert not send.isEnabled()

    composer.clear()
    QTest.keyClicks(composer, "line one")
    QTest.keyClick(composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(composer, "line two")
    assert composer.toPlainText() == "line one\nline two"
    QTest.mouseClick(send, Qt.MouseButton.LeftButton)

    # Calls run in order, so an earlier empty send would be first here.
    await wait_until(lambda: len(facade.said) == 1)
    assert facade.said == [(cid, "line one\nline two")]


async def test_a_streamed_reply_grows_in_place_then_the_stored_reply_replaces_it(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    cid = await open_chat(window, facade)
    facade.add_message(cid, "user", "Say hello")
    facade.start_live_reply(cid)
    await wait_until(lambda: child(window, LiveReplyWidget, "liveReply").isVisible())

    shown = ""
    for delta in ["Hel", "lo,", " **world**", "!"]:
        facade.stream(cid, delta)
        shown += delta.replace("**", "")
        await wait_until(lambda expected=shown: live_text(window) == expected)  # type: ignore[misc]

    facade.finish_reply(cid, "Hello, **world**!", STEPS[:1], 900)
    stored = [("UserMessage", "Say hello"), ("AssistantMessage", "Hello, world!")]
    # Qt shows a widget added to a visible window one event later, so wait for the final picture.
    await wait_until(lambda: live_text(window) is None and visible_messages(window) == stored)


async def test_many_quick_deltas_end_as_the_full_text(window: MainWindow, facade: FakeChatFacade) -> None:
    cid = await open_chat(window, facade)
    facade.start_live_reply(cid)
    for i in range(300):
        facade.stream(cid, f"{i} ")
    expected = "".join(f"{i} " for i in range(300)).strip()
    await wait_until(lambda: live_text(window) == expected)


async def test_the_live_line_counts_steps_while_working(window: MainWindow, facade: FakeChatFacade) -> None:
    cid = await open_chat(window, facade)
    facade.start_live_reply(cid)
    live = child(window, LiveReplyWidget, "liveReply")
    assert isinstance(live, LiveReplyWidget)
    await wait_until(lambda: live.activity.toggle.text() == "Working…")

    facade.add_step(cid, STEPS[0])
    facade.add_step(cid, STEPS[1])
    await wait_until(lambda: live.activity.toggle.text() == "Working… 2 steps ▸")


async def test_a_reply_folds_its_steps_and_unfolds_them_on_click(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    cid = await open_chat(window, facade)
    facade.add_message(cid, "assistant", "Prices are in.", steps=STEPS, duration_ms=3200)
    await wait_until(lambda: len(window.chat_view.message_widgets()) == 1)
    [reply] = window.chat_view.message_widgets()
    assert isinstance(reply, AssistantMessage)
    toggle = reply.activity.toggle
    assert toggle.objectName() == "activityToggle"
    assert toggle.isVisible()
    assert toggle.text() == "Took 3.2s · 4 steps ▸"
    assert reply.activity.steps_list() is None  # folded: nothing built, nothing shown

    QTest.mouseClick(toggle, Qt.MouseButton.LeftButton)

    steps = reply.activity.steps_list()
    assert steps is not None and steps.isVisible()
    assert toggle.text() == "Took 3.2s · 4 steps ▾"
    rows = steps.rows()
    assert [row.title.text() for row in rows] == [s.title for s in STEPS]
    assert all(row.isVisible() for row in rows)
    assert rows[0].meta.text() == "1.2k in · 210 out · 0.8s"
    assert rows[1].meta.text() == "1.1s"
    # Long detail is cut, never spilled: at most three lines, each elided to the row's width.
    assert len(rows[1].detail.shown_lines()) <= 3
    assert rows[1].detail.sizeHint().height() <= 3 * rows[1].detail.fontMetrics().lineSpacing()
    failed = rows[2].findChild(QLabel, "stepFailed")
    assert failed is not None and failed.isVisible() and failed.text() == "Failed"
    assert rows[0].findChild(QLabel, "stepFailed") is None

    QTest.mouseClick(toggle, Qt.MouseButton.LeftButton)
    assert not steps.isVisible()
    assert toggle.text().endswith("▸")


async def test_the_activity_line_reads_in_chinese(window: MainWindow, facade: FakeChatFacade) -> None:
    i18n.use_language("zh")
    view = ActivityView()
    view.set_activity(STEPS, 3200)
    assert view.toggle.text() == "用时 3.2 秒 · 4 步 ▸"


async def test_unfolded_steps_stay_open_when_messages_are_read_again(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    cid = await open_chat(window, facade)
    facade.add_message(cid, "assistant", "Done.", steps=STEPS, duration_ms=3200)
    await wait_until(lambda: len(window.chat_view.message_widgets()) == 1)
    [reply] = window.chat_view.message_widgets()
    assert isinstance(reply, AssistantMessage)
    QTest.mouseClick(reply.activity.toggle, Qt.MouseButton.LeftButton)

    facade.add_message(cid, "user", "Thanks")
    await wait_until(lambda: len(window.chat_view.message_widgets()) == 2)
    assert window.chat_view.message_widgets()[0] is reply
    assert reply.activity.expanded


async def test_an_error_message_shows_what_to_fix(window: MainWindow, facade: FakeChatFacade) -> None:
    cid = await open_chat(window, facade)
    text = (
        "The model endpoint https://api.deepseek.com/v1 refused the key (401). "
        "Update it in Settings › Models."
    )
    facade.add_message(cid, "error", text)
    await wait_until(lambda: len(window.chat_view.message_widgets()) == 1)
    [error] = window.chat_view.message_widgets()
    assert isinstance(error, ErrorMessage)
    assert error.isVisible()
    assert error.text_label.text() == text
    title = error.findChild(QLabel, "errorTitle")
    assert title is not None and title.text() == "Something went wrong"


async def test_a_notice_is_a_small_grey_line(window: MainWindow, facade: FakeChatFacade) -> None:
    cid = await open_chat(window, facade)
    facade.add_message(cid, "notice", "Switched to deepseek-chat")
    await wait_until(lambda: visible_messages(window) == [("NoticeMessage", "Switched to deepseek-chat")])
    [notice] = window.chat_view.message_widgets()
    assert isinstance(notice, NoticeMessage)
    assert notice.text_label.font().pointSizeF() < window.font().pointSizeF()


async def test_stop_shows_while_a_reply_is_live_and_cancels_it(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    cid = await open_chat(window, facade)
    stop = child(window, QPushButton, "stopButton")
    assert not stop.isVisible()

    facade.start_live_reply(cid)
    await wait_until(stop.isVisible)
    assert stop.text() == "Stop"
    QTest.mouseClick(stop, Qt.MouseButton.LeftButton)
    await wait_until(lambda: facade.cancelled == [cid])

    facade.end_live_reply(cid)
    await wait_until(lambda: not stop.isVisible())
    assert live_text(window) is None


async def test_a_live_reply_elsewhere_stays_out_of_this_conversation(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    other = facade.add_conversation("Other", updated_at=1.0)
    cid = await open_chat(window, facade)
    facade.start_live_reply(other.id)
    facade.stream(other.id, "not for this pane")
    facade.start_live_reply(cid)
    facade.stream(cid, "mine")
    await wait_until(lambda: live_text(window) == "mine")


async def test_a_failed_send_gives_the_text_back_and_says_why(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    await open_chat(window, facade)
    facade.say_error = RuntimeError("the host is not running")
    composer = child(window, QPlainTextEdit, "composerInput")
    assert isinstance(composer, QPlainTextEdit)
    QTest.keyClicks(composer, "hello")
    QTest.keyClick(composer, Qt.Key.Key_Return)

    error = child(window, QLabel, "composerError")
    await wait_until(error.isVisible)
    assert error.text() == "Not sent: the host is not running"
    assert composer.toPlainText() == "hello"


async def test_new_messages_scroll_into_view_only_when_already_at_the_bottom(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    cid = await open_chat(window, facade)
    for i in range(40):
        facade.add_message(cid, "user" if i % 2 else "assistant", f"message {i}\n\nwith a second paragraph")
    await wait_until(lambda: len(window.chat_view.message_widgets()) == 40)
    await wait_until(window.chat_view.is_at_bottom)

    facade.start_live_reply(cid)
    facade.stream(cid, "streaming at the end")
    await wait_until(lambda: live_text(window) == "streaming at the end")
    await wait_until(window.chat_view.is_at_bottom)

    window.chat_view.scroll_to_top()
    facade.stream(cid, " and more\n\nand a new paragraph")
    await wait_until(lambda: live_text(window) == "streaming at the end and more\nand a new paragraph")
    facade.add_message(cid, "user", "one more")
    await wait_until(lambda: len(window.chat_view.message_widgets()) == 41)
    assert not window.chat_view.is_at_bottom()
