"""A reasoning model's thinking in 处理过程: one folded line (Thought · 1,234 chars ▸) among the steps that
opens into the text, saying when only its start was kept, in a chat reply, a task run and a rule run alike;
and over a real host, a task whose model reasoned shows that step in its run."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from core.activity_steps import MAX_REASONING, ActivityStep
from core.host import Host
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade, run
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.task_script import SessionScript
from tests.ui.conftest import full_window, wait_until
from tests.ui.test_rules_ui import open_panel
from tests.waiting import wait_until as wait_on_bus
from ui import i18n
from ui.activity_view import ActivityView, StepRow
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage
from ui.task_detail_sections import RunSection

THOUGHT = "The user asked for prices. Fetch the page first, then compare."
LONG = "想" * (MAX_REASONING + 1234)


def reasoning(text: str) -> ActivityStep:
    """A reasoning step as the core stores it: the start of the text, and how long all of it was."""
    return ActivityStep(kind="reasoning", title="", detail=text[:MAX_REASONING], chars=len(text))


STEPS = (
    reasoning(THOUGHT),
    ActivityStep(
        "model", "deepseek-reasoner", detail="Fetching.", duration_ms=900, tokens_in=800, tokens_out=60
    ),
    ActivityStep("tool", "web_fetch: https://example.com/prices", detail="200 OK", duration_ms=300),
)


def reasoning_rows(rows: list[StepRow]) -> list[StepRow]:
    return [row for row in rows if row.step.kind == "reasoning"]


def shown_thought(row: StepRow) -> str | None:
    """The text a reasoning row shows unfolded; None while it is folded."""
    return row.thought.text() if row.thought is not None and row.thought.isVisible() else None


async def test_a_replys_reasoning_is_one_folded_line_that_opens_into_the_thinking(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    conversation = facade.add_conversation("Prices")
    await window.refresh()
    facade.add_message(conversation.id, "assistant", "Prices are in.", steps=STEPS, duration_ms=1500)
    await wait_until(lambda: len(window.chat_view.message_widgets()) == 1)
    [reply] = window.chat_view.message_widgets()
    assert isinstance(reply, AssistantMessage)
    assert reply.activity.toggle.text() == "Took 1.5s · 3 steps ▸"
    QTest.mouseClick(reply.activity.toggle, Qt.MouseButton.LeftButton)
    steps = reply.activity.steps_list()
    assert steps is not None
    [row] = reasoning_rows(steps.rows())
    assert steps.rows()[0] is row  # the model thought before it answered
    assert row.title.text() == f"Thought · {len(THOUGHT)} chars ▸"
    assert shown_thought(row) is None and not row.detail.isVisible()  # folded: one line, no text

    assert row.toggle is not None
    QTest.mouseClick(row.toggle, Qt.MouseButton.LeftButton)
    assert shown_thought(row) == THOUGHT
    assert row.title.text().endswith("▾")
    assert row.cut_note is None  # all of it was kept: nothing to say

    QTest.keyClick(row.toggle, Qt.Key.Key_Space)  # the keyboard folds it too
    assert shown_thought(row) is None and row.title.text().endswith("▸")


async def test_a_long_reasoning_says_how_much_of_it_is_kept() -> None:
    view = ActivityView()
    view.set_activity((reasoning(LONG),), 1000)
    view.set_expanded(True)
    list_ = view.steps_list()
    assert list_ is not None
    [row] = list_.rows()
    assert row.title.text() == f"Thought · {len(LONG):,} chars ▸"
    row.set_expanded(True)
    assert shown_thought(row) == LONG[:MAX_REASONING]
    assert row.cut_note is not None and row.cut_note.isVisible()
    assert row.cut_note.text() == f"Only the first 4,000 of {len(LONG):,} chars are kept here."


async def test_the_reasoning_line_reads_in_chinese() -> None:
    i18n.use_language("zh")
    view = ActivityView()
    view.set_activity((reasoning(LONG),), 1000)
    view.set_expanded(True)
    list_ = view.steps_list()
    assert list_ is not None
    [row] = list_.rows()
    assert row.title.text() == f"思考 · {len(LONG):,} 字 ▸"
    row.set_expanded(True)
    assert row.cut_note is not None
    assert row.cut_note.text() == f"这里只留了前 4,000 字，全文共 {len(LONG):,} 字。"


async def test_a_task_runs_reasoning_step_folds_inside_the_run(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, tasks: FakeTaskFacade
) -> None:
    window = MainWindow(facade, bridge, tasks=tasks)
    qtbot.addWidget(window)
    window.show()
    try:
        started = time.time() - 120
        done = run("launch", "ended", "done", steps=3, started_at=started, ended_at=started + 60)
        task = tasks.add_task("GPU prices", runs=[done])
        tasks.set_run_steps(task.id, done.id, STEPS)
        await window.refresh()
        window.open_task(task.id)
        detail = window.task_detail
        assert detail is not None
        await wait_until(lambda: len(detail.runs) == 1)
        [section] = detail.runs
        section.set_expanded(True)
        await wait_until(lambda: len(section.steps()) == 3)
        assert section.steps_list is not None
        [row] = reasoning_rows(section.steps_list.rows())
        assert row.title.text() == f"Thought · {len(THOUGHT)} chars ▸"
        assert shown_thought(row) is None
        assert row.toggle is not None
        QTest.mouseClick(row.toggle, Qt.MouseButton.LeftButton)
        assert shown_thought(row) == THOUGHT
        assert section.expanded  # opening the thought leaves the run open
    finally:
        window.shutdown()


async def test_a_rule_runs_reasoning_step_folds_inside_the_run(
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
        rule = rules.add_rule("Watch X")
        rules.add_run(rule.id, time.time() - 60, steps=STEPS)
        panel = await open_panel(window)
        await wait_until(lambda: len(panel.rule_rows) == 1)
        await panel.open_rule(rule.id)
        rule_detail = panel.rule_detail
        assert rule_detail is not None
        await wait_until(lambda: len(rule_detail.run_rows) == 1)
        run_row = rule_detail.run_rows[0]
        QTest.mouseClick(run_row.when, Qt.MouseButton.LeftButton)
        assert run_row.details is not None
        [row] = reasoning_rows(run_row.details.findChildren(StepRow))
        assert row.title.text() == f"Thought · {len(THOUGHT)} chars ▸"
        assert row.toggle is not None
        QTest.mouseClick(row.toggle, Qt.MouseButton.LeftButton)
        assert shown_thought(row) == THOUGHT
        assert run_row.expanded  # the click opened the thought, not closed the run
    finally:
        window.shutdown()


async def test_a_task_whose_model_reasoned_shows_the_thinking_folded_in_its_run(
    qtbot: QtBot, qapp: QApplication, host: Host, model_server: ScriptedModelServer
) -> None:
    script = SessionScript()
    model_server.responder = script
    thought = "Count the files with ls, then report the number."
    script.add(
        "Count files",
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo 3 files"})], reasoning=thought),
            Reply.tool_calls(
                [ToolCallSpec("task_report", {"state": "done", "summary": "3 files", "message": "3 files."})]
            ),
            Reply.text("Reported."),
        ],
    )
    bridge = EventBridge(host.bus)
    window = MainWindow(host.chat, bridge, tasks=host.tasks, attention=host.attention, bots=host.desktop_bots)
    qtbot.addWidget(window)
    window.show()
    try:
        await window.refresh()
        task = await host.tasks.create(
            bot_id=None, conversation_id=None, words="Count files", record_request=True
        )

        async def ended() -> bool:
            detail = await host.tasks.detail(task.id, "en")
            return bool(detail.runs) and detail.runs[0].state == "ended"

        await wait_on_bus(host.bus, ended, timeout=10, what="the task's run to end")
        window.open_task(task.id)
        detail_view = window.task_detail
        assert detail_view is not None
        await wait_until(lambda: len(detail_view.runs) == 1, timeout=5)
        section: RunSection = detail_view.runs[0]
        section.set_expanded(True)
        await wait_until(lambda: any(s.kind == "reasoning" for s in section.steps()), timeout=5)
        assert [s.kind for s in section.steps()][:3] == ["reasoning", "model", "tool"]
        assert section.steps_list is not None
        [row] = reasoning_rows(section.steps_list.rows())
        assert row.title.text() == f"Thought · {len(thought)} chars ▸"
        assert row.toggle is not None
        QTest.mouseClick(row.toggle, Qt.MouseButton.LeftButton)
        assert shown_thought(row) == thought
        # The answer the person reads is the Report, not the thinking.
        sent = [m["messages"] for m in script.requests["Count files"]]
        assert all(thought not in str(messages) for messages in sent[1:])
    finally:
        window.shutdown()
        bridge.close()
        await host.stop()
