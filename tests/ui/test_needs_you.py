"""Needs you on the desktop, as a person meets it: the sidebar's 「需要你 N」 row only while something waits,
and the page with each row's actions inline (option buttons, a reply box, approve/deny, retry, open)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.attention.items import reserve_item
from core.bus import EventBus
from core.changes import TaskChanged
from core.errors import UnprocessableError
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.attention_row import AttentionRow, ago
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.needs_you import NeedsYouView


@pytest.fixture
def attention(facade: FakeChatFacade) -> FakeAttentionFacade:
    return FakeAttentionFacade(facade)


@pytest.fixture
def needs_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    attention: FakeAttentionFacade,
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, tasks=tasks, attention=attention)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()


def page(window: MainWindow) -> NeedsYouView:
    assert window.needs_you is not None
    return window.needs_you


def rows(window: MainWindow) -> list[AttentionRow]:
    return [row for row in page(window).rows if row.isVisible()]


def subjects(window: MainWindow) -> list[str]:
    return [row.subject.text() for row in rows(window)]


def sidebar_entry(window: MainWindow) -> str | None:
    """The sidebar's needs-you row as a person sees it ("Needs you 2"), or None when it isn't there."""
    button = window.needs_you_button
    if not button.isVisible():
        return None
    return f"{button.text()} {button.badge.text()}"


async def open_page(window: MainWindow) -> None:
    await window.refresh()
    QTest.mouseClick(window.needs_you_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: window.shown_pane() is page(window))


async def test_nothing_is_drawn_when_healthy(
    needs_window: MainWindow, attention: FakeAttentionFacade, tasks: FakeTaskFacade
) -> None:
    await needs_window.refresh()
    tasks.add_task("Working away")  # a task changes: the list is read again, still empty
    await wait_until(lambda: len(attention.reads) >= 2)
    shown = needs_window.reload_attention()
    assert shown is not None
    await shown  # the latest read is on screen

    assert sidebar_entry(needs_window) is None


async def test_a_window_without_attention_has_no_needs_you_row(window: MainWindow) -> None:
    await window.refresh()
    assert window.needs_you is None
    assert sidebar_entry(window) is None


async def test_a_question_shows_the_row_and_the_page_lists_it_with_its_options(
    needs_window: MainWindow, attention: FakeAttentionFacade
) -> None:
    await needs_window.refresh()
    attention.add_question("GPU prices", "Monthly or hourly?", ["Monthly", "Hourly"], "Monthly")

    await wait_until(lambda: sidebar_entry(needs_window) == "Needs you 1")
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 1)

    row = rows(needs_window)[0]
    assert row.subject.text() == "GPU prices · waiting for your answer"
    assert row.line.text() == "Monthly or hourly?"
    assert row.default.text() == "If you don't answer: Monthly"  # once, on its own line
    assert row.button_texts() == ["Monthly", "Hourly", "Reply…"]
    assert row.dot.state == "needs"
    assert row.when.text() == "just now"
    assert page(needs_window).title() == "Needs you"
    assert needs_window.needs_you_button.isChecked()


async def test_in_chinese_the_row_reads_as_the_mock_up(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    attention: FakeAttentionFacade,
) -> None:
    i18n.use_language("zh")
    needs_window = MainWindow(facade, bridge, tasks=tasks, attention=attention)
    qtbot.addWidget(needs_window)
    needs_window.show()
    attention.add_question(
        "GPU 价格调研", "比较包月价还是按小时价", ["包月价", "按小时价"], "包月价", lang="zh",
        since=time.time() - 125,
    )  # fmt: skip
    attention.add_approval("rm -rf build/", "清理旧构建", lang="zh")
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 2)

    question, approval = rows(needs_window)
    assert question.default.text() == "不回复就按包月价做"
    assert question.line.text() == "比较包月价还是按小时价"
    assert question.when.text() == "2 分钟前"
    assert question.button_texts() == ["包月价", "按小时价", "回复…"]
    assert approval.subject.text() == "清理旧构建 · 等你批准"
    assert approval.button_texts() == ["批准一次", "拒绝"]
    assert sidebar_entry(needs_window) == "需要你 2"
    needs_window.shutdown()


async def test_clicking_an_option_answers_and_the_row_goes_when_the_item_does(
    needs_window: MainWindow, attention: FakeAttentionFacade
) -> None:
    item = attention.add_question("GPU prices", "Monthly or hourly?", ["Monthly", "Hourly"])
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 1)

    QTest.mouseClick(rows(needs_window)[0].button("Hourly"), Qt.MouseButton.LeftButton)
    await wait_until(lambda: attention.acted == [(item.id, "answer", {"answer": "Hourly"})])

    attention.remove(item.id)  # the answer reached the task: its question is closed
    await wait_until(lambda: not rows(needs_window))
    await wait_until(lambda: sidebar_entry(needs_window) is None)
    assert page(needs_window).hint.isVisible()
    assert page(needs_window).hint.text() == "Nothing needs you"


async def test_the_reply_box_sends_free_text(
    needs_window: MainWindow, attention: FakeAttentionFacade
) -> None:
    item = attention.add_question("GPU prices", "Which regions matter?", [])
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 1)
    row = rows(needs_window)[0]
    assert not row.reply_input.isVisible()

    QTest.mouseClick(row.button("Reply…"), Qt.MouseButton.LeftButton)
    await wait_until(row.reply_input.isVisible)
    QTest.keyClicks(row.reply_input, "Europe and Asia")
    QTest.keyClick(row.reply_input, Qt.Key.Key_Return)

    await wait_until(lambda: attention.acted == [(item.id, "answer", {"answer": "Europe and Asia"})])


async def test_a_refused_action_says_why_and_gives_the_buttons_back(
    needs_window: MainWindow, attention: FakeAttentionFacade
) -> None:
    attention.add_question("GPU prices", "Monthly or hourly?", ["Monthly", "Hourly"])
    gate = attention.act_gate = asyncio.Event()
    attention.act_error = UnprocessableError("answer", "That is not one of the options.")
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 1)
    row = rows(needs_window)[0]

    QTest.mouseClick(row.button("Monthly"), Qt.MouseButton.LeftButton)
    await wait_until(lambda: len(attention.acted) == 1)
    assert not row.button("Hourly").isEnabled()  # while it runs, the row's buttons are off
    assert needs_window.new_chat_button.isEnabled()  # and the window never waits on it
    gate.set()

    await wait_until(row.error.isVisible)
    assert row.error.text() == "Didn't go through: That is not one of the options."
    assert all(row.button(text).isEnabled() for text in row.button_texts())


async def test_retry_on_a_failed_task(needs_window: MainWindow, attention: FakeAttentionFacade) -> None:
    item = attention.add_failed_task("Quarterly deck", "The template can't be opened")
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 1)
    row = rows(needs_window)[0]
    assert row.dot.state == "failed"
    assert row.line.text() == "The template can't be opened"
    assert row.button_texts() == ["Retry", "Open task"]

    QTest.mouseClick(row.button("Retry"), Qt.MouseButton.LeftButton)

    await wait_until(lambda: attention.acted == [(item.id, "retry", {})])
    await wait_until(lambda: row.button("Retry").isEnabled())  # still there after the re-read


async def test_open_shows_the_task_and_back_returns_to_the_page(
    needs_window: MainWindow, attention: FakeAttentionFacade, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("Quarterly deck", stage="failed", latest_line="The template can't be opened")
    attention.add_failed_task("Quarterly deck", "The template can't be opened", task_id=task.id)
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 1)

    QTest.mouseClick(rows(needs_window)[0].button("Open task"), Qt.MouseButton.LeftButton)

    detail = needs_window.task_detail
    assert detail is not None
    await wait_until(lambda: needs_window.shown_pane() is detail and detail.title() == "Quarterly deck")
    assert attention.acted == []  # opening only shows; it changes nothing
    assert detail.back_button.text() == "‹ Needs you"
    QTest.mouseClick(detail.back_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: needs_window.shown_pane() is page(needs_window))


async def test_open_without_a_task_shows_the_conversation(
    needs_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    other = facade.add_conversation("Deploys")
    await needs_window.refresh()
    attention.add_approval("rm -rf build/", conversation_id=other.id)
    item = attention.add_failed_task("x", "y", conversation_id=other.id)
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 2)

    page(needs_window).openRequested.emit("", item.conversation_id)

    await wait_until(lambda: needs_window.shown_pane() is needs_window.chat_view)
    assert needs_window.conversation_list.current_id == other.id


async def test_open_on_the_reserve_opens_the_bots_settings(
    qtbot: QtBot, needs_window: MainWindow, attention: FakeAttentionFacade
) -> None:
    # The reserve is about the bot, not a task or a conversation: its balance and reserve are in settings.
    attention.add(
        reserve_item("bot-1", "Balance $0.80, under the $1.00 kept for chat", time.time(), lang="en")
    )
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 1)
    row = rows(needs_window)[0]
    assert row.button_texts() == ["Open settings"]

    with qtbot.waitSignal(needs_window.settingsRequested, timeout=3000) as asked:
        QTest.mouseClick(row.button("Open settings"), Qt.MouseButton.LeftButton)

    assert asked.args == ["bot-1"]
    assert needs_window.shown_pane() is page(needs_window) and attention.acted == []


async def test_the_empty_page_is_quiet(needs_window: MainWindow) -> None:
    await needs_window.refresh()
    needs_window.show_needs_you()  # e.g. from a notification, with nothing waiting
    await wait_until(page(needs_window).hint.isVisible)

    assert page(needs_window).hint.text() == "Nothing needs you"
    assert rows(needs_window) == []


async def test_rows_keep_the_service_order(needs_window: MainWindow, attention: FakeAttentionFacade) -> None:
    attention.add_question("A", "first?", ["yes"])
    attention.add_approval("rm -rf build/", "B")
    attention.add_failed_task("C", "broke")
    await open_page(needs_window)
    await wait_until(lambda: len(rows(needs_window)) == 3)

    assert subjects(needs_window) == [
        "A · waiting for your answer",
        "B · waiting for your approval",
        "C · failed",
    ]
    assert sidebar_entry(needs_window) == "Needs you 3"


async def test_attention_changes_are_folded() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    seen: list[str] = []
    bridge.attentionChanged.connect(lambda: seen.append("changed"))

    for n in range(200):
        bus.publish(TaskChanged(f"t{n % 3}"))
    # Wait until every burst has gone out (nothing due), then count: one signal.
    await wait_until(lambda: bool(seen) and not bridge.pending())

    assert seen == ["changed"]
    bridge.close()


def test_relative_times() -> None:
    now = time.time()
    assert ago(now - 5, now) == "just now"
    assert ago(now - 125, now) == "2 min ago"
    assert ago(now - 3 * 3600 - 10, now) == "3 h ago"
