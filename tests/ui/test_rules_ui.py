"""Rules in the bot panel (docs/desktop.md#bot-panel): their own 规则 group with each rule's state (grey
observe, green act, red paused with why, grey while the bot is paused), a rule opened in place with the
user's words and the next run (and the computer's own clock when its zone differs), the [观察 | 执行]
toggle, the run log only when the facade keeps one, 删除 after a confirm, and the rule editor (its live
preview, and refusals shown at the field the core names)."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.activity_steps import ActivityStep
from core.bots.views import BotUpdate
from core.bus import EventBus
from core.changes import RuleChanged
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import full_window, wait_until
from ui.bot_panel import BotPanel
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.rule_editor import RuleEditor
from ui.rule_rows import local_moment_words, moment_words

DAY = 24 * 3600
TZ = "Asia/Shanghai"


@pytest.fixture
def panel_window(rules_window: MainWindow) -> MainWindow:
    return rules_window


async def open_panel(window: MainWindow) -> BotPanel:
    await window.refresh()
    await wait_until(lambda: window.bot_view("bot-1") is not None)
    assert window.panel_button is not None
    QTest.mouseClick(window.panel_button, Qt.MouseButton.LeftButton)
    panel = window.bot_panel
    assert panel is not None
    await wait_until(panel.isVisible)
    return panel


async def test_rules_have_their_own_group_under_the_tasks(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade, rules: FakeRuleFacade
) -> None:
    now = time.time()
    facade.add_conversation("GPU")
    tasks.add_task("GPU prices", stage="working", updated_at=now - 20)
    tasks.add_task("Downloads", stage="ready", updated_at=now - DAY)
    rules.add_rule("Watch X", schedule={"kind": "daily", "time": "08:00"}, mode="observe")
    rules.add_rule("Other bot's", bot_id="bot-2")
    panel = await open_panel(panel_window)

    await wait_until(lambda: len(panel.rule_group_lines()) == 1 and len(panel.task_group_lines()) == 2)
    assert panel.task_group_lines() == ["GPU prices", "Ended 1"]
    assert panel.rule_group_lines() == ["Every day at 08:00 · Watch X"]
    assert panel.rules_group.isVisible()
    row = panel.rule_rows[0]
    assert row.dot.state == "idle"  # grey: the person chose observe
    when = moment_words(row.rule.next_run_at, TZ, time.time())
    assert row.state_text == f"Observing; runs again {when}"

    # A rule made meanwhile shows up without a click (RuleChanged through the bridge).
    rules.add_rule("Issue digest", schedule={"kind": "weekly", "time": "09:00", "days": [0]})
    await wait_until(lambda: len(panel.rule_rows) == 2)
    newest = panel.rule_rows[0]
    assert newest.text() == "Every Monday at 09:00 · Issue digest"
    assert newest.dot.state == "working"  # green: it acts
    assert newest.state_text.startswith("Acting · next ")


async def test_a_bot_with_only_rules_shows_the_rules_group_and_no_tasks_group(
    panel_window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    facade.add_conversation("GPU")
    panel = await open_panel(panel_window)
    await panel.reload()
    assert not panel.tasks_group.isVisible() and not panel.rules_group.isVisible()
    rules.add_rule("Watch X")
    await wait_until(panel.rules_group.isVisible)
    assert panel.rule_group_lines() == ["Every day at 08:00 · Watch X"]
    assert not panel.tasks_group.isVisible()


async def test_an_acting_rule_is_not_green_while_its_bot_is_paused(
    panel_window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade, bots: FakeBotFacade
) -> None:
    facade.add_conversation("GPU")
    rules.add_rule("Issue digest", schedule={"kind": "weekly", "time": "09:00", "days": [0]})
    panel = await open_panel(panel_window)
    await wait_until(lambda: len(panel.rule_rows) == 1)
    assert panel.rule_rows[0].dot.state == "working"
    await bots.update("bot-1", BotUpdate(paused=True))
    await wait_until(lambda: panel.rule_rows[0].dot.state == "idle")
    assert panel.rule_rows[0].state_text == "Bot paused; runs again once resumed"
    await bots.update("bot-1", BotUpdate(paused=False))
    await wait_until(lambda: panel.rule_rows[0].dot.state == "working")


async def test_a_paused_rule_is_red_and_says_why(
    panel_window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    facade.add_conversation("GPU")
    rule = rules.add_rule("Issue digest", paused_reason="failures")
    panel = await open_panel(panel_window)
    await wait_until(lambda: len(panel.rule_rows) == 1)
    row = panel.rule_rows[0]
    assert row.dot.state == "failed"
    assert row.state_text == "Paused: failed 3 times in a row"
    assert row.state_label.property("role") == "danger"

    rules.set_paused(rule.id, "budget")
    await wait_until(lambda: panel.rule_rows[0].state_text == "Paused: this month's budget is used up")


async def test_opening_a_rule_shows_its_words_and_next_run_and_the_toggle_switches_the_mode(
    panel_window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    facade.add_conversation("GPU")
    rule = rules.add_rule(
        "Watch X",
        "Every morning check the price of X and tell me when it is under 200",
        {"kind": "daily", "time": "08:00"},
        mode="observe",
        version=2,
    )
    panel = await open_panel(panel_window)
    await wait_until(lambda: len(panel.rule_rows) == 1 and panel.rule_rows[0].isVisible())
    QTest.mouseClick(panel.rule_rows[0], Qt.MouseButton.LeftButton)
    detail = panel.rule_detail
    assert detail is not None
    await wait_until(lambda: detail.rule is not None and detail.isVisible())

    assert panel.showing_detail()
    assert detail.title_label.text() == "Every day at 08:00 · Watch X"
    assert detail.words_label.text() == (
        "“Every morning check the price of X and tell me when it is under 200”"
    )
    when = moment_words(rule.next_run_at, TZ, time.time())
    here = local_moment_words(rule.next_run_at, TZ, time.time())
    # The computer's own clock is said beside the rule's when the zones differ.
    assert detail.next_label.text() == (f"{when} ({TZ}), {here} your time" if here else f"{when} ({TZ})")
    assert detail.version_label.text() == "Version 2"
    assert detail.destination_label.text() == "Desktop (the conversation it belongs to)"
    assert detail.mode_toggle.buttons["observe"].isChecked()
    # A rule that has not run yet shows its empty log, and 立即运行.
    assert detail.log_box.isVisible() and detail.log_empty.isVisible()
    assert detail.run_rows == []
    assert detail.run_button.isVisible()

    QTest.mouseClick(detail.mode_toggle.buttons["act"], Qt.MouseButton.LeftButton)
    await wait_until(lambda: detail.rule is not None and detail.rule.mode == "act")
    assert (
        "update",
        {"rule_id": rule.id, "title": None, "instruction": None, "schedule": None, "mode": "act"},
    ) in rules.calls
    assert detail.mode_toggle.buttons["act"].isChecked()
    assert detail.state_label.text() == f"Acting · next {when}"
    assert detail.state_dot.state == "working"

    QTest.keyClick(detail, Qt.Key.Key_Escape)
    await wait_until(lambda: not panel.showing_detail())
    await wait_until(lambda: panel.rule_rows[0].dot.state == "working")
    assert panel.rule_rows[0].state_text == f"Acting · next {when}"


async def test_the_run_log_shows_newest_first_when_the_facade_keeps_one(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
) -> None:
    rules = FakeRuleFacade(facade.bus)
    window = full_window(qtbot, facade, bridge, tasks, bots, rules)
    try:
        facade.add_conversation("GPU")
        rule = rules.add_rule("Watch X", mode="observe")
        now = time.time()
        rules.add_run(rule.id, now - 2 * DAY, outcome="failed", reason="the page didn't load", cost_usd=0.01)
        rules.add_run(rule.id, now - 60, would="X dropped to 199 (was 259)", cost_usd=0.03)
        rules.add_run(rule.id, now - DAY, cost_usd=0.02)
        panel = await open_panel(window)
        await wait_until(lambda: len(panel.rule_rows) == 1)
        await panel.open_rule(rule.id)
        detail = panel.rule_detail
        assert detail is not None
        await wait_until(lambda: len(detail.run_rows) == 3)
        assert detail.log_box.isVisible()
        assert detail.run_button.isVisible()
        lines = detail.log_lines()
        assert lines[0] == (
            f"{moment_words(now - 60, TZ, now)} · Observe · Would have sent: “X dropped to 199 (was 259)”"
            " · about $0.03"
        )
        yesterday, day_before = moment_words(now - DAY, TZ, now), moment_words(now - 2 * DAY, TZ, now)
        assert lines[1] == f"{yesterday} · Observe · Would have stayed quiet · about $0.02"
        assert lines[2] == f"{day_before} · Failed: the page didn't load · about $0.01"

        QTest.mouseClick(detail.run_button, Qt.MouseButton.LeftButton)
        await wait_until(lambda: rules.run_now_calls == [rule.id])
        # A run the core already put in words shows those words.
        rules.add_run(rule.id, now - 30, outcome="skipped", line="Skipped: the computer was off")
        await wait_until(lambda: len(detail.run_rows) == 4)
        assert detail.log_lines()[0] == f"{moment_words(now - 30, TZ, now)} · Skipped: the computer was off"
    finally:
        window.shutdown()


async def test_a_run_unfolds_in_place_to_its_report_version_permission_and_steps_and_folds_again(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
) -> None:
    rules = FakeRuleFacade(facade.bus)
    window = full_window(qtbot, facade, bridge, tasks, bots, rules)
    try:
        facade.add_conversation("GPU")
        rule = rules.add_rule("Watch X", mode="observe", version=2)
        now = time.time()
        rules.add_run(
            rule.id,
            now - 60,
            would="X dropped to 199",
            version=2,
            report={
                "summary": "X is 199 today",
                "message": "X dropped to 199",
                "would": "add it to the cart",
            },
            steps=(ActivityStep(kind="tool", title="Opened the X page"),),
        )
        panel = await open_panel(window)
        await wait_until(lambda: len(panel.rule_rows) == 1)
        await panel.open_rule(rule.id)
        detail = panel.rule_detail
        assert detail is not None
        await wait_until(lambda: len(detail.run_rows) == 1)
        row = detail.run_rows[0]
        assert not row.expanded  # folded by default
        assert row.detail_texts() == []

        QTest.mouseClick(row.when, Qt.MouseButton.LeftButton)
        assert row.expanded
        assert row.details is not None and row.details.isVisible()
        assert row.detail_texts() == [
            "Summary: X is 199 today",
            "Message: “X dropped to 199”",
            "Would have done: add it to the cart",
            "Version 2 · Read only",
            "Opened the X page",
        ]

        # A re-read keeps it unfolded.
        rules.bus.publish(RuleChanged(rule.id))
        await wait_until(lambda: detail.run_rows[0] is not row)
        assert detail.run_rows[0].expanded

        QTest.mouseClick(detail.run_rows[0].when, Qt.MouseButton.LeftButton)
        assert not detail.run_rows[0].expanded
        assert detail.run_rows[0].detail_texts() == []
    finally:
        window.shutdown()


async def test_delete_asks_in_place_then_goes_back_and_the_row_is_gone(
    panel_window: MainWindow, facade: FakeChatFacade, rules: FakeRuleFacade
) -> None:
    facade.add_conversation("GPU")
    rule = rules.add_rule("Watch X")
    panel = await open_panel(panel_window)
    await wait_until(lambda: len(panel.rule_rows) == 1)
    await panel.open_rule(rule.id)
    detail = panel.rule_detail
    assert detail is not None
    QTest.mouseClick(detail.delete_button, Qt.MouseButton.LeftButton)
    assert detail.confirm.isVisible()
    assert ("delete", {"rule_id": rule.id}) not in rules.calls
    QTest.mouseClick(detail.confirm_delete, Qt.MouseButton.LeftButton)
    await wait_until(lambda: not panel.showing_detail())
    assert ("delete", {"rule_id": rule.id}) in rules.calls
    await wait_until(lambda: not panel.rule_rows)
    assert not panel.tasks_group.isVisible()


async def test_the_editor_refuses_every_under_15_minutes_at_the_minutes_field_then_creates(
    qtbot: QtBot, rules: FakeRuleFacade
) -> None:
    editor = RuleEditor(rules, bot_id="bot-1")
    qtbot.addWidget(editor)
    editor.show()
    assert editor.mode_toggle.mode == "act"  # act by default (docs/runs.md#observe-and-act)
    editor.title_input.setText("Check the build")
    editor.words_input.setPlainText("Look at the nightly build and tell me if it broke")
    editor.set_kind("every")
    assert editor.rows["schedule.minutes"].isVisible()
    assert not editor.rows["schedule.time"].isVisible()
    editor.minutes_input.setText("5")
    assert not editor.preview_ok  # the preview already says what is wrong, quietly

    with qtbot.waitSignal(editor.saved, raising=False, timeout=300) as blocker:
        editor.submit()
        await wait_until(lambda: bool(editor.field_error("schedule.minutes")))
    assert not blocker.signal_triggered
    assert "15 minutes" in editor.field_error("schedule.minutes")
    assert editor.isVisible()
    assert await rules.list_rules() == []

    editor.minutes_input.setText("30")
    saved: list[object] = []
    editor.saved.connect(saved.append)
    editor.submit()
    await wait_until(lambda: bool(saved))
    assert not editor.isVisible()
    made = await rules.list_rules(lang="en")
    assert len(made) == 1
    assert made[0].schedule == {"kind": "every", "tz": TZ, "minutes": 30}
    assert made[0].mode == "act"
    assert made[0].schedule_words == f"Every 30 minutes ({TZ})"


async def test_the_editor_shows_a_refused_title_at_its_field(qtbot: QtBot, rules: FakeRuleFacade) -> None:
    editor = RuleEditor(rules, bot_id="bot-1")
    qtbot.addWidget(editor)
    editor.show()
    editor.words_input.setPlainText("Remind me to stretch")
    editor.submit()
    await wait_until(lambda: bool(editor.field_error("title")))
    assert editor.field_error("title") == "The title needs 1 to 80 characters."
    assert not editor.error.isVisible()


async def test_the_preview_follows_the_schedule(qtbot: QtBot) -> None:
    # Monday 2026-11-30 10:00 in Shanghai: the next three weekday mornings are known.
    now = 1_796_004_000.0
    rules = FakeRuleFacade(EventBus(), now=now)
    editor = RuleEditor(rules, bot_id="bot-1", now=rules.now)
    qtbot.addWidget(editor)
    editor.show()
    assert editor.preview_text() == (f"Every day at 08:00 ({TZ})\nNext: tomorrow 08:00, Wed 08:00, Thu 08:00")
    editor.time_input.setText("09:30")
    assert editor.preview_text().startswith(f"Every day at 09:30 ({TZ})")
    editor.set_kind("weekly")
    assert not editor.preview_ok  # a weekly schedule needs a day
    editor.day_buttons[0].setChecked(True)
    assert editor.preview_text() == (
        f"Every Monday at 09:30 ({TZ})\nNext: 12/7 09:30, 12/14 09:30, 12/21 09:30"
    )
    editor.set_kind("every")
    editor.minutes_input.setText("120")
    assert editor.preview_text().startswith(f"Every 2 hours ({TZ})\nNext: today ")


async def test_editing_keeps_the_mode_and_sends_only_what_changed(
    qtbot: QtBot, rules: FakeRuleFacade
) -> None:
    rule = rules.add_rule("Watch X", "check X", {"kind": "daily", "time": "08:00", "days": [0, 1, 2, 3, 4]})
    editor = RuleEditor(rules, rule=rule)
    qtbot.addWidget(editor)
    editor.show()
    assert editor.kind() == "daily"
    assert editor.workdays.isChecked()
    assert not editor.rows["mode"].isVisibleTo(editor)  # the mode is switched in the detail
    editor.words_input.setPlainText("check X and Y")
    saved: list[object] = []
    editor.saved.connect(saved.append)
    editor.submit()
    await wait_until(lambda: bool(saved))
    assert rules.calls[-1] == (
        "update",
        {
            "rule_id": rule.id,
            "title": "Watch X",
            "instruction": "check X and Y",
            "schedule": None,
            "mode": None,
        },
    )
    assert (await rules.get(rule.id)).version == 2


async def test_the_bridge_folds_rule_changes_into_one_signal(qtbot: QtBot) -> None:
    bus = EventBus()
    bridge = EventBridge(bus, task_interval_ms=10)
    seen: list[str] = []
    bridge.ruleChanged.connect(seen.append)
    try:
        for _ in range(5):
            bus.publish(RuleChanged("ru_1"))
        await wait_until(lambda: seen == ["ru_1"] and not bridge.pending())
    finally:
        bridge.close()
