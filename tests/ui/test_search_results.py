"""The sidebar search finds words inside messages, tasks and rules, and a hit opens what it found: a message
opens its conversation scrolled to it (tinted a moment), a task its detail, a rule its detail."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.search.views import SearchHit
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.bridge import EventBridge
from ui.main_window import MainWindow


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    i18n.use_language("en")
    yield
    i18n.use_language(None)


@pytest.fixture
def searching_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    rules: FakeRuleFacade,
) -> Iterator[MainWindow]:
    made = MainWindow(
        facade,
        bridge,
        tasks=tasks,
        attention=FakeAttentionFacade(facade),
        bots=bots,
        rules=rules,
    )
    made.use_search(facade)
    qtbot.addWidget(made)
    made.resize(1000, 640)
    made.show()
    yield made
    made.shutdown()


def click_hit(window: MainWindow, hit: SearchHit) -> None:
    listing = window.conversation_list
    QTest.mouseClick(listing.viewport(), Qt.MouseButton.LeftButton, pos=listing.hit_rect(hit).center())


async def test_a_word_only_inside_an_older_message_is_found_and_opens_there(
    searching_window: MainWindow, facade: FakeChatFacade
) -> None:
    window = searching_window
    trip = facade.add_conversation("Trip planning")
    for n in range(12):
        facade.add_message(trip.id, "assistant", f"Earlier chat about trains, number {n}.\n" * 3)
    older = facade.add_message(trip.id, "user", "Find me a hotel near the Louvre for three nights")
    for n in range(25):  # enough newer talk that the older message is far above the bottom
        facade.add_message(trip.id, "assistant", f"Another line of chat about trains, number {n}.\n" * 3)
    facade.add_conversation("Groceries")  # the newest: shown first, trip is not chosen
    await window.refresh()
    assert window.chat_view.conversation_id != trip.id

    window.search.setFocus()
    QTest.keyClicks(window.search, "louvre")

    # No title or last line says it: only the message's text does.
    await wait_until(lambda: bool(window.conversation_list.hits()))
    (hit,) = window.conversation_list.hits()
    assert (hit.kind, hit.conversation_id, hit.message_id) == ("message", trip.id, older.id)
    assert "Louvre" in hit.snippet
    assert window.conversation_list.nothing_found() == ""

    click_hit(window, hit)

    view = window.chat_view
    await wait_until(lambda: view.conversation_id == trip.id)
    # Scrolled up to it, in the middle of the conversation: neither the top nor the bottom.
    await wait_until(
        lambda: view.message_visible(older.id) and view.scroll_value() > 0 and not view.is_at_bottom()
    )
    assert view.highlighted_message_id() == older.id
    assert not view.message_visible(view.message_widgets()[-1].view.id)
    assert window.shown_pane() is window.chat_view
    assert window.search.text() == "louvre"  # the search stays, for the next hit


async def test_typing_quickly_asks_once_and_clearing_drops_the_hits(
    searching_window: MainWindow, facade: FakeChatFacade
) -> None:
    window = searching_window
    chat = facade.add_conversation("Chat")
    facade.add_message(chat.id, "user", "去成都的机票多少钱")
    await window.refresh()
    facade.searches.clear()

    QTest.keyClicks(window.search, "jipiao")  # six keys, quickly
    await wait_until(lambda: bool(facade.searches))
    assert facade.searches == ["jipiao"]  # one query for the whole word, once typing paused

    window.search.setText("成都")
    await wait_until(lambda: bool(window.conversation_list.hits()))
    assert window.conversation_list.hits()[0].snippet == "去成都的机票多少钱"

    QTest.keyClick(window.search, Qt.Key.Key_Escape)
    assert window.conversation_list.hits() == []


async def test_nothing_found_waits_for_the_content_search_then_says_so(
    searching_window: MainWindow, facade: FakeChatFacade
) -> None:
    window = searching_window
    facade.add_conversation("Chat")
    await window.refresh()
    QTest.keyClicks(window.search, "zebra")
    assert window.conversation_list.nothing_found() == ""  # the messages are not searched yet
    await wait_until(lambda: window.conversation_list.nothing_found() != "")
    assert "zebra" in window.conversation_list.nothing_found()


async def test_a_task_hit_opens_the_task_and_a_rule_hit_the_rule(
    searching_window: MainWindow,
    facade: FakeChatFacade,
    tasks: FakeTaskFacade,
    rules: FakeRuleFacade,
) -> None:
    window = searching_window
    chat = facade.add_conversation("Chat")
    task = tasks.add_task("Compare laptops", conversation_id=chat.id)
    rule = rules.add_rule("Flight price watch", "Every morning check flights to Chengdu")
    facade.other_hits = [
        SearchHit(
            "task", task.title, "battery life of laptops", ((16, 23),), 5.0, "bot-1", chat.id, 0, task.id
        ),
        SearchHit("rule", rule.title, "check flights to Chengdu", (), 4.0, "bot-1", chat.id, 0, "", rule.id),
    ]
    await window.refresh()
    await wait_until(lambda: window.bot_view("bot-1") is not None)

    QTest.keyClicks(window.search, "laptops")
    await wait_until(lambda: [h.kind for h in window.conversation_list.hits()] == ["task"])
    click_hit(window, window.conversation_list.hits()[0])
    detail = window.task_detail
    assert detail is not None
    await wait_until(lambda: window.shown_pane() is detail)
    assert detail.task_id == task.id

    window.search.clear()
    QTest.keyClicks(window.search, "chengdu")
    await wait_until(lambda: [h.kind for h in window.conversation_list.hits()] == ["rule"])
    click_hit(window, window.conversation_list.hits()[0])
    panel = window.bot_panel
    assert panel is not None and panel.rule_detail is not None
    await wait_until(
        lambda: panel.isVisible() and panel.rule_detail is not None and panel.rule_detail.rule_id == rule.id
    )
