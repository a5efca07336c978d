"""The sidebar search with the rest of the window around it: one Escape clears it even while the bot's
panel is open, a new chat shows (and is chosen) whatever the search says, and a search that keeps nothing
says 「没有找到「…」」 instead of leaving the sidebar blank."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.bot_panel import BotPanel
from ui.bridge import EventBridge
from ui.conversation_list import ConversationRole
from ui.main_window import MainWindow


@pytest.fixture
def panel_window(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, tasks: FakeTaskFacade, bots: FakeBotFacade
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, tasks=tasks, attention=FakeAttentionFacade(facade), bots=bots)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    i18n.use_language("en")
    yield
    i18n.use_language(None)


async def open_panel(window: MainWindow) -> BotPanel:
    await window.refresh()
    await wait_until(lambda: window.bot_view("bot-1") is not None)
    window.show_bot_panel()
    panel = window.bot_panel
    assert panel is not None
    await wait_until(panel.isVisible)
    return panel


def selected_title(window: MainWindow) -> str:
    rows = window.conversation_list.selectionModel().selectedIndexes()
    return str(rows[0].data()) if rows else ""


async def test_one_escape_clears_the_search_while_the_bots_panel_is_open(
    panel_window: MainWindow, facade: FakeChatFacade
) -> None:
    facade.add_conversation("GPU prices")
    facade.add_conversation("Downloads")
    panel = await open_panel(panel_window)
    panel_window.search.setFocus()
    QTest.keyClicks(panel_window.search, "gpu")
    await wait_until(lambda: panel_window.conversation_list.shown_titles() == ["天天", "GPU prices"])

    QTest.keyClick(panel_window.search, Qt.Key.Key_Escape)

    assert panel_window.search.text() == ""
    assert panel_window.conversation_list.shown_titles() == ["天天", "Downloads", "GPU prices"]
    assert panel.isVisible()  # the panel was not what the Escape was for

    QTest.keyClick(panel_window.search, Qt.Key.Key_Escape)  # a second one, on the empty box, closes it
    await wait_until(lambda: not panel.isVisible())


async def test_escape_inside_the_panel_still_closes_it(
    panel_window: MainWindow, facade: FakeChatFacade
) -> None:
    facade.add_conversation("GPU prices")
    panel = await open_panel(panel_window)
    panel.setFocus()
    QTest.keyClick(panel, Qt.Key.Key_Escape)
    await wait_until(lambda: not panel.isVisible())


async def test_a_new_chat_shows_and_is_chosen_while_a_search_is_on(
    panel_window: MainWindow, facade: FakeChatFacade
) -> None:
    before = {facade.add_conversation("GPU prices").id, facade.add_conversation("Downloads").id}
    await panel_window.refresh()
    panel_window.search.setText("gpu")
    await wait_until(lambda: panel_window.conversation_list.shown_titles() == ["天天", "GPU prices"])

    QTest.mouseClick(panel_window.new_chat_button, Qt.MouseButton.LeftButton)
    listing = panel_window.conversation_list
    await wait_until(lambda: listing.current_id not in before)
    created = listing.current_id

    assert listing.shown_titles() == ["天天", "New chat", "GPU prices"]
    assert selected_title(panel_window) == "New chat"
    index = listing.selectionModel().selectedIndexes()[0]
    assert index.data(ConversationRole).id == created
    # Searching again is a fresh look: the search alone decides what shows.
    panel_window.search.setText("down")
    await wait_until(lambda: panel_window.conversation_list.shown_titles() == ["天天", "Downloads"])


@pytest.mark.parametrize(
    ("lang", "expected"), [("en", "Nothing found for “no such thing”"), ("zh", "没有找到「no such thing」")]
)
async def test_a_search_that_keeps_nothing_says_so(
    panel_window: MainWindow, facade: FakeChatFacade, lang: i18n.Language, expected: str
) -> None:
    i18n.use_language(lang)
    facade.add_conversation("GPU prices")
    await panel_window.refresh()
    listing = panel_window.conversation_list
    assert listing.nothing_found() == ""

    panel_window.search.setText("  no  such thing ")
    await wait_until(lambda: listing.shown_titles() == [])
    assert listing.nothing_found() == expected

    panel_window.search.clear()
    await wait_until(lambda: listing.shown_titles() == ["天天", "GPU prices"])
    assert listing.nothing_found() == ""
