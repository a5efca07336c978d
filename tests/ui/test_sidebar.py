"""The sidebar with bots: a bot's row over its conversations (avatar ring and activity line, live), the
search box, the needs-you row only while something waits, the gear, and the first-run slot."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QShortcut
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QToolButton
from pytestqt.qtbot import QtBot

from core.bots.views import BotActivity, BotUpdate
from core.chat.views import ConversationView
from core.sidebar_state import BotActivityReader
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import wait_until
from ui.bridge import EventBridge
from ui.conversation_list import ConversationRole
from ui.main_window import MainWindow


class LiveBots(FakeBotFacade):
    """The fake bots, with their activity derived from the fake tasks, needs-you and chat the way the host
    derives it (core.sidebar_state), so an avatar follows a task without a test setting its state."""

    def __init__(self, chat: FakeChatFacade, tasks: FakeTaskFacade, attention: FakeAttentionFacade) -> None:
        super().__init__(chat.bus)
        self._reader = BotActivityReader(tasks, attention, chat, self)

    async def names(self) -> dict[str, str]:
        return {bot.id: bot.name for bot in await self.list()}

    async def activity(self, lang: str = "zh") -> list[BotActivity]:
        return await self._reader.read(lang)


@pytest.fixture
def attention(facade: FakeChatFacade) -> FakeAttentionFacade:
    return FakeAttentionFacade(facade)


@pytest.fixture
def bots(facade: FakeChatFacade, tasks: FakeTaskFacade, attention: FakeAttentionFacade) -> LiveBots:
    made = LiveBots(facade, tasks, attention)
    made.add("天天", bot_id="bot-1")
    return made


@pytest.fixture
def bot_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    attention: FakeAttentionFacade,
    bots: LiveBots,
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, tasks=tasks, attention=attention, bots=bots)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()


def states(window: MainWindow) -> dict[str, tuple[str, str]]:
    return {e.bot.name: (e.state, e.line) for e in window.conversation_list.bot_entries()}


async def test_a_healthy_host_draws_no_needs_you_row_and_no_waiting_avatar(
    bot_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    facade.add_conversation("GPU", "好的。")
    tasks.add_task("Done already", stage="ready")
    await bot_window.refresh()
    await wait_until(lambda: bool(bot_window.conversation_list.bot_entries()))
    read = bot_window.reload_activity()
    assert read is not None
    await read

    assert states(bot_window) == {"天天": ("idle", "")}
    assert not bot_window.needs_you_button.isVisible()
    # One bot: its row once, at the top, with its conversations under it.
    assert bot_window.conversation_list.shown_titles() == ["天天", "GPU"]


async def test_a_bots_avatar_follows_its_task_live(
    bot_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade, attention: FakeAttentionFacade
) -> None:
    facade.add_conversation("GPU")
    await bot_window.refresh()
    task = tasks.add_task("GPU 价格调研", stage="working")
    await wait_until(lambda: states(bot_window).get("天天") == ("working", "Working…"))

    question = attention.add_question("GPU 价格调研", "Monthly or hourly?", task_id=task.id)
    tasks.update_task(task.id, stage="needs-you/answer")
    await wait_until(lambda: states(bot_window)["天天"][0] == "waiting")
    assert states(bot_window)["天天"][1] == "GPU 价格调研 is waiting for your answer"
    assert bot_window.needs_you_button.isVisible()

    attention.remove(question.id)
    tasks.update_task(task.id, stage="working")
    await wait_until(lambda: states(bot_window)["天天"][0] == "working")
    tasks.update_task(task.id, stage="ready")
    await wait_until(lambda: states(bot_window)["天天"] == ("idle", ""))
    assert not bot_window.needs_you_button.isVisible()


async def test_conversations_are_grouped_under_their_bots(
    bot_window: MainWindow, facade: FakeChatFacade, bots: LiveBots
) -> None:
    bots.add("哒哒", bot_id="bot-2")
    facade.add_conversation("Weekly", bot_id="bot-2", updated_at=3_000.0)
    facade.add_conversation("GPU", updated_at=2_000.0)
    facade.add_conversation("Downloads", updated_at=1_000.0)
    await bot_window.refresh()
    await wait_until(lambda: len(bot_window.conversation_list.bot_entries()) == 2)

    assert bot_window.conversation_list.shown_titles() == ["天天", "GPU", "Downloads", "哒哒", "Weekly"]
    # The most recent conversation opens first, wherever it is in the list.
    assert bot_window.chat_view.title_label.text() == "Weekly"


async def test_search_narrows_the_list_as_you_type(
    bot_window: MainWindow, facade: FakeChatFacade, bots: LiveBots
) -> None:
    bots.add("哒哒", bot_id="bot-2")
    facade.add_conversation("GPU prices", "A100 is cheapest at C")
    facade.add_conversation("Downloads", "Sorted 214 files")
    facade.add_conversation("Weekly", "draft ready", bot_id="bot-2")
    await bot_window.refresh()
    await wait_until(lambda: len(bot_window.conversation_list.bot_entries()) == 2)

    QTest.keyClicks(bot_window.search, "gpu")
    await wait_until(lambda: bot_window.conversation_list.shown_titles() == ["天天", "GPU prices"])
    bot_window.search.setText("214 FILES")  # the last line counts too, in any case
    await wait_until(lambda: bot_window.conversation_list.shown_titles() == ["天天", "Downloads"])
    bot_window.search.setText("哒哒")  # a bot's name brings all of its conversations
    await wait_until(lambda: bot_window.conversation_list.shown_titles() == ["哒哒", "Weekly"])
    bot_window.search.setText("nothing like this")
    await wait_until(lambda: bot_window.conversation_list.shown_titles() == [])

    bot_window.search.setFocus()
    QTest.keyClick(bot_window.search, Qt.Key.Key_Escape)
    await wait_until(lambda: len(bot_window.conversation_list.shown_titles()) == 5)


async def test_search_without_bots_filters_conversations(window: MainWindow, facade: FakeChatFacade) -> None:
    facade.add_conversation("GPU prices")
    facade.add_conversation("Downloads")
    await window.refresh()
    window.search.setText("down")
    await wait_until(lambda: window.conversation_list.shown_titles() == ["Downloads"])


async def test_the_gear_offers_the_shown_bots_settings_and_the_apps_in_one_menu(
    bot_window: MainWindow, facade: FakeChatFacade, bots: LiveBots
) -> None:
    bots.add("哒哒", bot_id="bot-2")
    chosen = facade.add_conversation("Weekly", bot_id="bot-2")
    await bot_window.refresh()
    bot_window.reload_bots()
    await wait_until(lambda: bot_window.bot_view("bot-2") is not None)
    bot_window.conversation_list.select(chosen.id)
    gear = bot_window.findChild(QToolButton, "settingsButton")
    assert gear is not None and gear.isVisible() and gear.text() == "Settings"
    QTest.mouseClick(gear, Qt.MouseButton.LeftButton)
    menu = bot_window.settings_menu
    await wait_until(menu.isVisible)
    entries = [action.text() for action in menu.actions() if not action.isSeparator()]
    assert entries == [
        "Settings of 哒哒",
        "App settings (language, theme, start at login)",
        "Keyboard shortcuts",
    ]

    asked: list[str] = []
    bot_window.settingsRequested.connect(asked.append)
    menu.actions()[0].trigger()
    assert asked == ["bot-2"]
    app_asked: list[bool] = []
    bot_window.appSettingsRequested.connect(lambda: app_asked.append(True))
    menu.actions()[1].trigger()
    assert app_asked == [True]
    menu.hide()

    wanted: list[bool] = []
    bot_window.newTaskRequested.connect(lambda: wanted.append(True))
    bot_window.new_task()
    assert wanted == [True]


async def test_the_shortcuts_list_shows_every_key_the_window_binds(bot_window: MainWindow) -> None:
    dialog = bot_window.show_shortcuts()
    await wait_until(dialog.isVisible)
    words = dict(dialog.rows)
    assert words["New chat"] == "Ctrl+N" and words["Next conversation"] == "Ctrl+PgDown" and "Send" in words
    bound = {s.key().toString() for s in bot_window.findChildren(QShortcut)}
    assert {"Ctrl+N", "Ctrl+Shift+N", "Ctrl+F", "Ctrl+,", "Ctrl+PgDown", "Ctrl+PgUp", "F1"} <= bound
    dialog.close()


async def test_ctrl_page_down_and_up_walk_the_conversations_as_listed(
    bot_window: MainWindow, facade: FakeChatFacade
) -> None:
    facade.add_conversation("First")
    facade.add_conversation("Second")
    await bot_window.refresh()
    await wait_until(lambda: len(bot_window.conversation_list.conversations()) == 2)
    model = bot_window.conversation_list.model()
    listed = [
        row.id
        for row in (model.index(i, 0).data(ConversationRole) for i in range(model.rowCount()))
        if isinstance(row, ConversationView)
    ]
    bot_window.conversation_list.select(listed[0])
    bot_window.step_conversation(1)
    assert bot_window.conversation_list.current_id == listed[1]
    bot_window.step_conversation(1)  # past the last one: round to the first
    assert bot_window.conversation_list.current_id == listed[0]
    bot_window.step_conversation(-1)
    assert bot_window.conversation_list.current_id == listed[1]


async def test_closing_to_the_tray_says_so(bot_window: MainWindow) -> None:
    closed: list[bool] = []
    bot_window.closedToTray.connect(lambda: closed.append(True))
    bot_window.set_close_to_tray(True)
    bot_window.close()
    assert closed == [True] and not bot_window.isVisible()


async def test_the_first_run_card_stands_in_for_the_chat(
    bot_window: MainWindow, facade: FakeChatFacade
) -> None:
    facade.add_conversation("GPU")
    await bot_window.refresh()
    card = QLabel("first run")
    bot_window.show_first_run(card)
    assert bot_window.shown_pane() is card and card.isVisible()
    bot_window.show_chat()  # a conversation click while set up is not done keeps the card
    assert bot_window.shown_pane() is card

    bot_window.hide_first_run()
    assert bot_window.shown_pane() is bot_window.chat_view
    assert bot_window.pane.indexOf(card) < 0


async def test_a_paused_idle_bot_says_paused_under_its_name(
    bot_window: MainWindow, facade: FakeChatFacade, bots: LiveBots, tasks: FakeTaskFacade
) -> None:
    facade.add_conversation("GPU")
    await bot_window.refresh()
    await wait_until(lambda: states(bot_window).get("天天") == ("idle", ""))

    await bots.update("bot-1", BotUpdate(paused=True))
    await wait_until(lambda: states(bot_window)["天天"] == ("idle", "Background work is paused"))
    tasks.add_task("Chat keeps going", stage="working")  # what it is doing says more than paused
    await wait_until(lambda: states(bot_window)["天天"] == ("working", "Working…"))
