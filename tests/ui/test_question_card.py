"""The question card in the conversation, as a person meets it (docs/attention.md#questions: "the same card in
the conversation and in needs you"): option buttons and 回复… while a task's question is open, 批准一次 / 拒绝
for an approval, the answer going out without the window waiting, a refusal said under the card, and once the
question is closed (here, in needs-you or over the API) one grey line instead of the buttons."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.chat.views import QuestionCard
from core.errors import UnprocessableError
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.message_widgets import MarkdownLabel
from ui.question_card import QuestionCardWidget


@pytest.fixture
def attention(facade: FakeChatFacade) -> FakeAttentionFacade:
    return FakeAttentionFacade(facade)


@pytest.fixture
def chat_window(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, attention: FakeAttentionFacade
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, attention=attention)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()


def cards(window: MainWindow) -> list[QuestionCardWidget]:
    return [card for card in window.chat_view.question_cards() if card.isVisible()]


async def one_card(window: MainWindow) -> QuestionCardWidget:
    await wait_until(lambda: len(cards(window)) == 1)
    return cards(window)[0]


def shown_buttons(card: QuestionCardWidget) -> list[str]:
    """The buttons a person can see on the card, left to right."""
    return [button.text() for button in card.bar.buttons if button.isVisible()]


def message_text(card: QuestionCardWidget) -> str:
    message = card.parentWidget()
    assert message is not None
    label = message.findChild(MarkdownLabel, "messageText")
    assert isinstance(label, MarkdownLabel)
    return label.plain_text()


async def open_conversation(window: MainWindow, facade: FakeChatFacade) -> str:
    cid = facade.add_conversation("GPU prices").id
    await window.refresh()
    return cid


async def test_an_open_question_shows_its_options_and_a_reply_button(
    chat_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    cid = await open_conversation(chat_window, facade)
    attention.push_question(cid, "GPU prices", "Monthly or hourly?", ["Monthly", "Hourly"], task_id="t1")

    card = await one_card(chat_window)
    assert shown_buttons(card) == ["Monthly", "Hourly", "Reply…"]
    # The options are the buttons: the pushed text's "Options: …" line isn't said twice.
    assert message_text(card) == "“GPU prices” asks: Monthly or hourly?"
    assert not card.default.isVisible()
    assert card.closed_text() == ""


async def test_an_option_answers_without_waiting_and_the_card_then_says_what_you_answered(
    chat_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    cid = await open_conversation(chat_window, facade)
    item, message = attention.push_question(cid, "GPU prices", "Monthly or hourly?", ["Monthly", "Hourly"])
    card = await one_card(chat_window)
    gate = attention.act_gate = asyncio.Event()

    QTest.mouseClick(card.bar.button("Monthly"), Qt.MouseButton.LeftButton)

    await wait_until(lambda: attention.acted == [(item.id, "answer", {"answer": "Monthly"})])
    assert item.id.startswith("question:")
    assert not card.bar.button("Hourly").isEnabled()  # off while the answer runs
    assert chat_window.new_chat_button.isEnabled()  # and the window never waits on it
    gate.set()

    assert message.question is not None
    facade.set_question(message.question.question_id, "answered", "Monthly")  # publishes TaskChanged only
    await wait_until(lambda: card.closed_text() == "You answered: Monthly")
    assert shown_buttons(card) == []
    assert message_text(card) == "“GPU prices” asks: Monthly or hourly?"


async def test_a_question_answered_elsewhere_flips_its_card(
    chat_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    cid = await open_conversation(chat_window, facade)
    _item, message = attention.push_question(cid, "GPU prices", "Which account?", ["Work", "Personal"])
    card = await one_card(chat_window)
    assert message.question is not None

    facade.set_question(message.question.question_id, "answered", "Work")  # e.g. from needs-you or the API

    await wait_until(lambda: card.closed_text() == "You answered: Work")
    assert shown_buttons(card) == []


async def test_the_reply_box_sends_free_text(
    chat_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    cid = await open_conversation(chat_window, facade)
    item, _message = attention.push_question(cid, "GPU prices", "Which regions matter?")
    attention.resolves = True
    card = await one_card(chat_window)
    assert shown_buttons(card) == ["Reply…"]
    assert not card.bar.reply_input.isVisible()

    QTest.mouseClick(card.bar.button("Reply…"), Qt.MouseButton.LeftButton)
    await wait_until(card.bar.reply_input.isVisible)
    QTest.keyClicks(card.bar.reply_input, "Europe and Asia")
    QTest.keyClick(card.bar.reply_input, Qt.Key.Key_Return)

    await wait_until(lambda: attention.acted == [(item.id, "answer", {"answer": "Europe and Asia"})])
    await wait_until(lambda: card.closed_text() == "You answered: Europe and Asia")
    assert not card.bar.reply_input.isVisible()


async def test_an_approval_card_approves_or_denies(
    chat_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    cid = await open_conversation(chat_window, facade)
    build, _ = attention.push_approval(cid, "recursive delete", "rm -rf build/", "Clean builds", task_id="t7")
    cache, _ = attention.push_approval(cid, "recursive delete", "rm -rf cache/")  # the chat's own
    attention.resolves = True
    await wait_until(lambda: len(cards(chat_window)) == 2)
    first, second = cards(chat_window)
    assert shown_buttons(first) == ["Approve once", "Deny"]
    assert shown_buttons(second) == ["Approve once", "Deny"]
    assert message_text(first) == "Approval needed (task “Clean builds”): recursive delete rm -rf build/"

    QTest.mouseClick(first.bar.button("Approve once"), Qt.MouseButton.LeftButton)
    await wait_until(lambda: first.closed_text() == "Approved")
    QTest.mouseClick(second.bar.button("Deny"), Qt.MouseButton.LeftButton)
    await wait_until(lambda: second.closed_text() == "Denied")

    assert build.id.startswith("approval:") and cache.id.startswith("approval:")
    assert attention.acted == [(build.id, "approve", {}), (cache.id, "deny", {})]
    assert shown_buttons(first) == [] and shown_buttons(second) == []


async def test_a_refused_answer_says_why_under_the_card_and_gives_the_buttons_back(
    chat_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    cid = await open_conversation(chat_window, facade)
    attention.push_question(cid, "GPU prices", "Monthly or hourly?", ["Monthly", "Hourly"])
    attention.act_error = UnprocessableError("answer", "That is not one of the options.")
    card = await one_card(chat_window)
    assert not card.bar.error.isVisible()

    QTest.mouseClick(card.bar.button("Hourly"), Qt.MouseButton.LeftButton)

    await wait_until(card.bar.error.isVisible)
    assert card.bar.error.text() == "Didn't go through: That is not one of the options."
    assert all(card.bar.button(text).isEnabled() for text in shown_buttons(card))
    assert shown_buttons(card) == ["Monthly", "Hourly", "Reply…"]


async def test_a_question_with_a_default_says_it_and_then_that_it_went_with_it(
    chat_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    cid = await open_conversation(chat_window, facade)
    _item, message = attention.push_question(
        cid, "GPU prices", "Monthly or hourly?", ["Monthly", "Hourly"], "Monthly", task_id="t3"
    )
    card = await one_card(chat_window)
    assert card.default.isVisible()
    assert card.default.text() == "If you don't answer: Monthly"
    assert message_text(card) == "“GPU prices” asks: Monthly or hourly?"  # the default is the card's line
    assert message.question is not None

    facade.set_question(message.question.question_id, "withdrawn")  # the task finished first

    await wait_until(lambda: card.closed_text() == "Went with Monthly")
    assert shown_buttons(card) == []
    assert not card.default.isVisible()


@pytest.mark.parametrize(
    ("card", "line"),
    [
        (QuestionCard("q1", ("包月价", "按小时价"), None, "answered", "按小时价"), "你回答了：按小时价"),
        (QuestionCard("q1", ("包月价", "按小时价"), "包月价", "withdrawn"), "已按包月价处理"),
        (QuestionCard("q1", (), None, "withdrawn"), "已撤回"),
        (QuestionCard("q1", (), None, "expired"), "已过期"),
        (QuestionCard("a1", (), None, "answered", "approved", kind="approval"), "已批准"),
        (QuestionCard("a1", (), None, "answered", "denied", kind="approval"), "已拒绝"),
        (QuestionCard("a1", (), None, "expired", kind="approval"), "已过期"),
    ],
)
async def test_a_closed_card_says_one_grey_line_in_chinese(
    chat_window: MainWindow, facade: FakeChatFacade, card: QuestionCard, line: str
) -> None:
    i18n.use_language("zh")
    cid = facade.add_conversation("GPU 价格调研").id
    facade.add_message(cid, "assistant", "「GPU 价格调研」想问你:比较包月价还是按小时价?", question=card)
    await chat_window.refresh()

    shown = await one_card(chat_window)
    await wait_until(lambda: shown.closed_text() == line)
    assert shown_buttons(shown) == []
    assert shown.closed.property("role") == "faint"


async def test_without_the_attention_facade_an_open_card_only_reads(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    cid = facade.add_conversation("GPU prices").id
    card = QuestionCard("q1", ("Monthly", "Hourly"), "Monthly", "open")
    facade.add_message(cid, "assistant", "“GPU prices” asks: Monthly or hourly?", question=card)
    await window.refresh()

    shown = await one_card(window)
    assert shown_buttons(shown) == []
    assert shown.default.text() == "If you don't answer: Monthly"
