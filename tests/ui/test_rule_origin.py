"""Rules in the chat as a user meets them (docs/desktop.md#chat-view): a rule's message says which rule sent
it (「来自规则「…」」) and opens that rule, also from its right-click menu; a deleted rule's message says so
and opens nothing; a reply that created a rule carries a chip that opens the rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPlainTextEdit
from pytestqt.qtbot import QtBot

from core.chat.views import RuleChip
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import make_host
from tests.integration.rule_api import DAILY_8
from tests.integration.task_script import SessionScript
from tests.ui.conftest import full_window, wait_until
from tests.ui.test_chat_view import child
from ui import i18n
from ui.bot_panel import BotPanel
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage, MessageWidget
from ui.rule_origin import RuleChipRow, RuleOriginLink

SAID = "X dropped to $199"


@pytest.fixture
def window(rules_window: MainWindow) -> MainWindow:
    return rules_window


def has_message(window: MainWindow, text: str) -> bool:
    return any(w.view.text == text for w in window.chat_view.message_widgets())


def the_message(window: MainWindow, text: str) -> MessageWidget:
    return next(w for w in window.chat_view.message_widgets() if w.view.text == text)


def link_of(widget: MessageWidget) -> RuleOriginLink:
    assert widget.rule_caption is not None and widget.rule_caption.isVisible()
    return widget.rule_caption


def caption_shown(window: MainWindow, text: str) -> bool:
    """The message with `text` is on screen with its rule caption: a widget added to a shown layout is
    shown a loop turn after it is added, so waiting for the message alone is not enough."""
    return any(
        w.view.text == text and w.rule_caption is not None and w.rule_caption.isVisible()
        for w in window.chat_view.message_widgets()
    )


def panel_of(window: MainWindow) -> BotPanel:
    assert window.bot_panel is not None
    return window.bot_panel


async def rule_shown(window: MainWindow, rule_id: str) -> None:
    panel = panel_of(window)

    def shown() -> bool:
        detail = panel.rule_detail
        return panel.isVisible() and detail is not None and detail.isVisible() and detail.rule is not None

    await wait_until(shown)
    detail = panel.rule_detail
    assert detail is not None and detail.rule is not None and detail.rule.id == rule_id


async def a_rules_message(
    window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> tuple[str, str]:
    """(the conversation, the rule) once the rule's message is shown."""
    conversation = facade.add_conversation("X")
    rule = rules.add_rule("Watch X", "Every morning check the price of X")
    facade.add_message(conversation.id, "assistant", SAID, rule_id=rule.id, rule_title="Watch X")
    await window.refresh()
    await wait_until(lambda: caption_shown(window, SAID))
    return conversation.id, rule.id


async def test_a_rules_message_names_the_rule_and_clicking_the_name_opens_it(
    window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    _, rule_id = await a_rules_message(window, facade, rules)
    link = link_of(the_message(window, SAID))
    assert link.text() == "From rule “Watch X”"
    assert not panel_of(window).isVisible()

    QTest.mouseClick(link, Qt.MouseButton.LeftButton)

    await rule_shown(window, rule_id)


async def test_the_name_is_in_chinese_in_a_chinese_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    rules: FakeRuleFacade,
) -> None:
    i18n.use_language("zh")
    made = full_window(qtbot, facade, bridge, tasks, bots, rules)
    try:
        await a_rules_message(made, facade, rules)
        assert link_of(the_message(made, SAID)).text() == "来自规则「Watch X」"
    finally:
        made.shutdown()


async def test_open_rule_is_in_the_menu_of_a_rules_message_only(
    window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    cid, rule_id = await a_rules_message(window, facade, rules)
    facade.add_message(cid, "assistant", "plain reply")
    await wait_until(lambda: has_message(window, "plain reply"))
    assert [a.text() for a in the_message(window, "plain reply").menu().actions()] == ["Copy"]
    actions = {a.text(): a for a in the_message(window, SAID).menu().actions()}
    assert list(actions) == ["Copy", "Open rule"]

    actions["Open rule"].trigger()

    await rule_shown(window, rule_id)


async def test_a_deleted_rules_message_says_so_and_opens_nothing(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    conversation = facade.add_conversation("X")
    facade.add_message(conversation.id, "assistant", SAID, rule_id="ru_gone00000000")
    await window.refresh()
    await wait_until(lambda: caption_shown(window, SAID))
    widget = the_message(window, SAID)
    link = link_of(widget)
    assert link.text() == "From a deleted rule"
    assert [a.text() for a in widget.menu().actions()] == ["Copy"]

    QTest.mouseClick(link, Qt.MouseButton.LeftButton)

    assert not panel_of(window).isVisible()


async def test_a_reply_that_created_a_rule_carries_a_chip_that_opens_it(
    window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    conversation = facade.add_conversation("X")
    rule = rules.add_rule("Watch X", "Every morning check the price of X")
    facade.add_message(conversation.id, "user", "Every morning check the price of X")
    reply = "Rule created: every day at 08:00, Watch X."
    facade.add_message(conversation.id, "assistant", reply, rule_chips=[RuleChip(rule.id, "Watch X", "act")])
    await window.refresh()
    await wait_until(lambda: has_message(window, reply))
    widget = the_message(window, reply)
    assert isinstance(widget, AssistantMessage) and widget.rule_caption is None
    [chip] = widget.rule_chips
    assert isinstance(chip, RuleChipRow) and chip.isVisible()
    assert chip.text() == "Rule · Watch X ›" and chip.dot.state == "working"

    QTest.mouseClick(chip, Qt.MouseButton.LeftButton)

    await rule_shown(window, rule.id)


async def test_over_a_real_host_a_rule_made_in_chat_has_its_chip_and_its_message_names_it(
    qtbot: QtBot, tmp_path: Path
) -> None:
    """The real ChatService, rules and outbox behind the window: the chat agent creates a reminder, its
    reply carries the rule's chip, the reminder's message names the rule, and both open it."""
    i18n.use_language("zh")
    words = "每天早上 8 点提醒我喝水"
    confirmation = "好,每天 08:00 提醒你喝水。"
    args = {"title": "喝水", "instruction": words, "schedule": DAILY_8, "kind": "remind"}
    script = SessionScript()
    script.add("chat", [Reply.tool_calls([ToolCallSpec("rule_create", args)]), Reply.text(confirmation)])
    async with ScriptedModelServer() as server:
        server.responder = script
        host = make_host(tmp_path / "data", server.base_url, home=tmp_path / "home")
        await host.start()
        bridge = EventBridge(host.bus)
        made = MainWindow(
            host.chat,
            bridge,
            tasks=host.tasks,
            attention=host.attention,
            bots=host.desktop_bots,
            rules=host.rules,
        )
        qtbot.addWidget(made)
        made.show()
        try:
            await made.refresh()
            made.chat_view.composer.set_text(words)
            QTest.keyClick(child(made, QPlainTextEdit, "composerInput"), Qt.Key.Key_Return)
            await wait_until(lambda: has_message(made, confirmation), timeout=10)
            reply = the_message(made, confirmation)
            assert isinstance(reply, AssistantMessage)
            await wait_until(lambda: bool(reply.rule_chips) and reply.rule_chips[0].isVisible())
            [chip] = reply.rule_chips
            assert chip.text() == "规则 · 喝水 ›"
            [rule] = await host.rules.list_rules()

            QTest.mouseClick(chip, Qt.MouseButton.LeftButton)
            await rule_shown(made, rule.id)

            await host.rules.run_now(rule.id)

            def reminders() -> list[MessageWidget]:
                return [w for w in made.chat_view.message_widgets() if w.view.rule_id == rule.id]

            await wait_until(lambda: caption_shown(made, words), timeout=10)
            [reminder] = reminders()
            assert (reminder.view.role, reminder.view.text) == ("assistant", words)
            link = link_of(reminder)
            assert link.text() == "来自规则「喝水」"
            made.set_bot_panel_visible(False)
            QTest.mouseClick(link, Qt.MouseButton.LeftButton)
            await rule_shown(made, rule.id)
        finally:
            made.shutdown()
            bridge.close()
            await host.stop()


async def test_a_change_to_a_named_rule_reads_the_conversation_again(
    window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    cid, rule_id = await a_rules_message(window, facade, rules)
    other = rules.add_rule("Other")
    assert window.chat_view.shown_rule_ids() == {rule_id}  # a change to `other` costs nothing here
    before = facade.reads.count(cid)

    rules.set_paused(rule_id, "failures")

    await wait_until(lambda: facade.reads.count(cid) > before)
    assert other.id not in window.chat_view.shown_rule_ids()
