"""The bot's info panel beside the chat: its 任务 group (working, then needs you, then 「已结束 N」 folding
the ended ones), a task opened in place with the detail the main pane shows, 来自 back to the conversation,
删除 after a confirm, a run's steps folding and unfolding, and the panel's approvals."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.activity_steps import ActivityStep
from core.bots.views import BotUpdate
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade, run
from tests.ui.conftest import wait_until
from ui.bot_panel import BotPanel
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.task_detail import TaskDetailBody, TaskDetailView

DAY = 24 * 3600


@pytest.fixture
def attention(facade: FakeChatFacade) -> FakeAttentionFacade:
    return FakeAttentionFacade(facade)


@pytest.fixture
def panel_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    attention: FakeAttentionFacade,
    bots: FakeBotFacade,
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, tasks=tasks, attention=attention, bots=bots)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()


async def open_panel(window: MainWindow) -> BotPanel:
    await window.refresh()
    await wait_until(lambda: window.bot_view("bot-1") is not None)
    assert window.panel_button is not None
    QTest.mouseClick(window.panel_button, Qt.MouseButton.LeftButton)
    panel = window.bot_panel
    assert panel is not None
    await wait_until(panel.isVisible)
    return panel


async def test_the_tasks_group_lists_working_then_needs_you_then_folds_the_ended(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    now = time.time()
    facade.add_conversation("GPU")
    tasks.add_task("Deck", stage="needs-you/answer", updated_at=now - 10)
    tasks.add_task("GPU prices", stage="working", updated_at=now - 20)
    tasks.add_task("Downloads", stage="ready", updated_at=now - DAY)
    tasks.add_task("README", stage="stopped", updated_at=now - 2 * DAY)
    tasks.add_task("Last year", stage="ready", updated_at=now - 90 * DAY)
    tasks.add_task("Someone else's", stage="working", bot_id="bot-2")
    panel = await open_panel(panel_window)

    await wait_until(panel.tasks_group.isVisible)
    assert panel.task_group_lines() == ["GPU prices", "Deck", "Ended 2"]
    assert panel.ended_toggle is not None
    QTest.mouseClick(panel.ended_toggle, Qt.MouseButton.LeftButton)
    await wait_until(lambda: len(panel.task_group_lines()) == 5)
    assert panel.task_group_lines() == ["GPU prices", "Deck", "Ended 2", "Downloads", "README"]
    QTest.mouseClick(panel.ended_toggle, Qt.MouseButton.LeftButton)
    await wait_until(lambda: len(panel.task_group_lines()) == 3)


async def test_without_tasks_there_is_no_tasks_group(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    facade.add_conversation("GPU")
    tasks.add_task("Last year", stage="ready", updated_at=time.time() - 90 * DAY)
    panel = await open_panel(panel_window)
    await panel.reload()
    assert not panel.tasks_group.isVisible()
    assert panel.channels_group.isVisible()
    assert not panel.approvals_group.isVisible()

    tasks.add_task("First", stage="working")
    await wait_until(lambda: panel.task_group_lines() == ["First"])


async def test_a_row_opens_the_task_in_place_and_from_opens_the_conversation(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    origin = facade.add_conversation("Where it was asked", updated_at=1_000.0)
    facade.add_conversation("Newer", updated_at=2_000.0)
    task = tasks.add_task(
        "GPU prices", words="Compare three clouds", conversation_id=origin.id, latest_line="Compared 3"
    )
    panel = await open_panel(panel_window)
    assert panel_window.chat_view.title_label.text() == "Newer"
    await wait_until(lambda: bool(panel.task_rows))

    QTest.mouseClick(panel.task_rows[0], Qt.MouseButton.LeftButton)
    detail = panel.detail
    assert detail is not None
    await wait_until(lambda: panel.showing_detail() and detail.latest_label.text() == "Compared 3")
    # The same class the main pane shows.
    assert isinstance(detail, TaskDetailBody)
    assert panel_window.task_detail is not None and isinstance(panel_window.task_detail.body, TaskDetailBody)
    assert detail.task_id == task.id
    assert detail.title_label.text() == "GPU prices"
    assert detail.words_label.text() == "「Compare three clouds」"

    QTest.mouseClick(detail.origin, Qt.MouseButton.LeftButton)
    await wait_until(lambda: panel_window.chat_view.title_label.text() == "Where it was asked")
    assert panel_window.conversation_list.current_id == origin.id

    QTest.mouseClick(panel.back_button, Qt.MouseButton.LeftButton)
    assert not panel.showing_detail()


async def test_from_in_the_main_pane_opens_the_conversation_too(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    origin = facade.add_conversation("Asked here", updated_at=1_000.0)
    facade.add_conversation("Newer", updated_at=2_000.0)
    task = tasks.add_task("GPU prices", conversation_id=origin.id)
    await panel_window.refresh()
    panel_window.open_task(task.id, back_to="list")
    detail = panel_window.task_detail
    assert isinstance(detail, TaskDetailView)
    await wait_until(detail.well.isVisible)
    QTest.mouseClick(detail.body.origin, Qt.MouseButton.LeftButton)
    await wait_until(lambda: panel_window.shown_pane() is panel_window.chat_view)
    assert panel_window.chat_view.title_label.text() == "Asked here"


async def test_delete_asks_first_then_removes_the_task(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    facade.add_conversation("GPU")
    keep = tasks.add_task("Keep me", stage="working")
    gone = tasks.add_task("Delete me", stage="ready", folder_bytes=1_500_000, folder="/nowhere/tasks/x")
    panel = await open_panel(panel_window)
    await wait_until(lambda: panel.ended_toggle is not None)
    panel.open_task(gone.id)
    detail = panel.detail
    assert detail is not None
    await wait_until(detail.delete_button.isVisible)
    assert detail.folder_size.text() == "1.4 MB"
    assert not detail.stop_button.isVisible()  # nothing to stop once it ended

    QTest.mouseClick(detail.delete_button, Qt.MouseButton.LeftButton)
    assert detail.confirm.isVisible() and tasks.deleted == []
    QTest.mouseClick(detail.cancel_delete, Qt.MouseButton.LeftButton)
    assert not detail.confirm.isVisible() and detail.delete_button.isVisible()

    QTest.mouseClick(detail.delete_button, Qt.MouseButton.LeftButton)
    QTest.mouseClick(detail.confirm_delete, Qt.MouseButton.LeftButton)
    await wait_until(lambda: tasks.deleted == [gone.id] and not panel.showing_detail())
    await wait_until(lambda: panel.task_group_lines() == ["Keep me"])
    assert [t.id for t in await tasks.list_tasks()] == [keep.id]


async def test_a_delete_that_fails_says_why_keeps_the_task_and_brings_the_actions_back(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    facade.add_conversation("GPU")
    task = tasks.add_task("Delete me", stage="ready")
    tasks.delete_error = OSError("the folder is in use")
    panel = await open_panel(panel_window)
    panel.open_task(task.id)
    detail = panel.detail
    assert detail is not None
    await wait_until(detail.delete_button.isVisible)

    QTest.mouseClick(detail.delete_button, Qt.MouseButton.LeftButton)
    QTest.mouseClick(detail.confirm_delete, Qt.MouseButton.LeftButton)
    QTest.mouseClick(detail.confirm_delete, Qt.MouseButton.LeftButton)  # a second click while it deletes
    await wait_until(detail.notice.isVisible)
    assert detail.notice.text() == "Couldn't delete it: the folder is in use"
    assert tasks.deleted == [task.id]  # asked once
    assert not detail.confirm.isVisible() and detail.delete_button.isVisible()
    assert panel.showing_detail() and [t.id for t in await tasks.list_tasks()] == [task.id]

    # Once the folder is free, the same button deletes it.
    tasks.delete_error = None
    QTest.mouseClick(detail.delete_button, Qt.MouseButton.LeftButton)
    QTest.mouseClick(detail.confirm_delete, Qt.MouseButton.LeftButton)
    await wait_until(lambda: not panel.showing_detail())
    assert tasks.deleted == [task.id, task.id] and await tasks.list_tasks() == []


async def test_a_runs_steps_fold_and_unfold_and_follow_a_working_run(
    panel_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    started = time.time() - 180
    working = run("answer", "running", steps=2, started_at=started)
    task = tasks.add_task(
        "GPU prices",
        runs=[
            run("launch", "ended", "needs_you", steps=9, started_at=started - 600, ended_at=started - 420),
            working,
        ],
    )
    tasks.set_run_steps(
        task.id, working.id, [ActivityStep("model", "Plan"), ActivityStep("tool", "bash: ls")], 130
    )
    await panel_window.refresh()
    panel_window.open_task(task.id)
    detail = panel_window.task_detail
    assert detail is not None
    await wait_until(lambda: len(detail.runs) == 2)
    first, second = detail.runs
    assert first.line() == "Run 1 · started · 9 steps · 3 min · answered"
    assert second.line().startswith("Run 2 · after your answer · 2 steps · ")
    assert not second.expanded and tasks.activity_reads == []  # folded: nothing read

    second.set_expanded(True)
    await wait_until(lambda: [s.title for s in second.steps()] == ["Plan", "bash: ls"])
    assert second.steps_list is not None and second.steps_list.isVisible()
    assert second.dropped_label.isVisible() and second.dropped_label.text() == "130 earlier steps not shown"

    # Live: a new step saved mid-run reaches the open list.
    tasks.set_run_steps(
        task.id,
        working.id,
        [ActivityStep("model", "Plan"), ActivityStep("tool", "bash: ls"), ActivityStep("model", "Write")],
    )
    await wait_until(lambda: len(second.steps()) == 3)
    assert not second.dropped_label.isVisible()

    second.set_expanded(False)
    assert not second.steps_list.isVisible()


async def test_the_panel_shows_this_bots_approvals_and_acts_on_them(
    panel_window: MainWindow, facade: FakeChatFacade, attention: FakeAttentionFacade
) -> None:
    facade.add_conversation("GPU")
    approval = attention.add_approval("rm -rf build/", "Clean builds")
    attention.add_question("GPU", "Monthly or hourly?")
    panel = await open_panel(panel_window)
    await wait_until(lambda: len(panel.approval_rows) == 1)
    [row] = panel.approval_rows
    assert row.button_texts() == ["Approve once", "Deny"]
    QTest.mouseClick(row.button("Approve once"), Qt.MouseButton.LeftButton)
    await wait_until(lambda: attention.acted == [(approval.id, "approve", {})])
    attention.remove(approval.id)
    await wait_until(lambda: not panel.approvals_group.isVisible())


async def test_a_paused_bot_says_so_in_the_panel_and_resume_unpauses_it(
    panel_window: MainWindow, facade: FakeChatFacade, bots: FakeBotFacade
) -> None:
    facade.add_conversation("GPU")
    panel = await open_panel(panel_window)
    assert not panel.paused_row.isVisible()  # healthy: nothing drawn

    await bots.update("bot-1", BotUpdate(paused=True))
    await wait_until(panel.paused_row.isVisible)
    QTest.mouseClick(panel.resume_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: not panel.paused_row.isVisible())
    assert [(bot_id, change.paused) for bot_id, change in bots.updates] == [("bot-1", True), ("bot-1", False)]
