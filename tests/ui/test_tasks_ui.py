"""Background tasks as a user meets them on the desktop: the chip under the reply that started a task (live),
the task list with its sections, the task detail with 停止, and the caption on a task's result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton
from pytestqt.qtbot import QtBot

from core.bus import EventBus
from core.changes import TaskChanged
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade, run
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import make_host
from tests.integration.task_script import SessionScript, bash, report
from tests.ui.conftest import wait_until
from tests.ui.test_chat_view import child
from ui import i18n
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage, ErrorMessage, MessageWidget
from ui.task_chip import TaskChipRow, dot_state
from ui.task_detail import TaskDetailView
from ui.task_list import TaskListView, row_meta

DAY = 24 * 3600


@pytest.fixture
def task_window(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, tasks: FakeTaskFacade
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, tasks=tasks)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()


def chips(window: MainWindow) -> list[TaskChipRow]:
    return [
        chip
        for widget in window.chat_view.message_widgets()
        if isinstance(widget, AssistantMessage)
        for chip in widget.chips
        if chip.isVisible()
    ]


def chip_texts(window: MainWindow) -> list[str]:
    return [chip.text() for chip in chips(window)]


def task_list(window: MainWindow) -> TaskListView:
    assert window.task_list is not None
    return window.task_list


def task_detail(window: MainWindow) -> TaskDetailView:
    assert window.task_detail is not None
    return window.task_detail


def row_texts(window: MainWindow) -> list[tuple[str, str, str]]:
    """Each task row as (title, what the right side says, latest line)."""
    listing = task_list(window)
    if not listing.list.isVisible():
        return []
    return [(task.title, row_meta(task), task.latest_line) for task in listing.shown_tasks()]


def click_row(window: MainWindow, task_id: str) -> None:
    listing = task_list(window)
    rect = listing.row_rect(task_id)
    assert rect.isValid()
    QTest.mouseClick(
        listing.list.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center()
    )


def caption_of(widget: MessageWidget) -> str | None:
    caption = widget.findChild(QLabel, "fromTaskCaption")
    return caption.text() if caption is not None and caption.isVisible() else None


async def open_chat_with_chip(
    window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade, **task_fields: object
) -> tuple[str, str]:
    conversation = facade.add_conversation("GPU")
    task = tasks.add_task("GPU 价格调研", conversation_id=conversation.id, **task_fields)  # type: ignore[arg-type]
    chip = tasks.chip(task.id)
    assert chip is not None
    facade.add_message(conversation.id, "user", "帮我调研三家云的 GPU 价格")
    facade.add_message(conversation.id, "assistant", "好,后台开始调研,好了告诉你。", task_chips=[chip])
    await window.refresh()
    return conversation.id, task.id


async def test_the_chip_reads_its_stage_and_follows_the_task(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    i18n.use_language("zh")
    _cid, task_id = await open_chat_with_chip(task_window, facade, tasks)
    await wait_until(lambda: chip_texts(task_window) == ["后台任务 · GPU 价格调研 · 进行中 ›"])
    assert chips(task_window)[0].dot.state == "working"

    tasks.update_task(task_id, stage="ready", latest_line="报告写好了")  # publishes TaskChanged

    await wait_until(lambda: chip_texts(task_window) == ["后台任务 · GPU 价格调研 · 已完成 ›"])
    assert chips(task_window)[0].dot.state == "idle"


async def test_only_a_change_to_a_task_shown_here_re_reads_the_conversation(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade, bridge: EventBridge
) -> None:
    cid, task_id = await open_chat_with_chip(task_window, facade, tasks)
    await wait_until(lambda: len(chips(task_window)) == 1)
    reads = facade.reads.count(cid)

    tasks.add_task("Elsewhere", conversation_id="other")  # another conversation's task
    tasks.update_task(task_id, latest_line="step 2")
    await wait_until(lambda: facade.reads.count(cid) == reads + 1 and not bridge.pending())
    assert facade.reads.count(cid) == reads + 1  # no second read follows: nothing more is due


async def test_a_chip_in_english(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    tasks.chip_lang = "en"
    await open_chat_with_chip(task_window, facade, tasks, stage="needs-you/answer")
    await wait_until(
        lambda: chip_texts(task_window) == ["Background task · GPU 价格调研 · Waiting for your answer ›"]
    )
    assert chips(task_window)[0].dot.state == "needs"


async def test_clicking_the_chip_opens_the_task_and_back_returns_to_the_chat(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    _cid, _task_id = await open_chat_with_chip(
        task_window,
        facade,
        tasks,
        latest_line="Compared 3 clouds; checking B's yearly price",
        words="Compare the GPU prices of three clouds",
        folder="/data/bots/b/workspace/tasks/gpu-prices-3f2a1c",
        runs=[run("launch", "ended", "done", steps=34, started_at=1000.0, ended_at=1180.0)],
    )
    await wait_until(lambda: len(chips(task_window)) == 1)

    QTest.mouseClick(chips(task_window)[0], Qt.MouseButton.LeftButton)

    detail = task_detail(task_window)
    await wait_until(lambda: detail.isVisible() and detail.latest_label.isVisible())
    assert task_window.shown_pane() is detail
    assert detail.title() == "GPU 价格调研"
    assert detail.latest_label.text() == "Compared 3 clouds; checking B's yearly price"
    assert detail.stage_label.text() == "Working"
    assert detail.stage_dot.state == "working"
    assert detail.words_label.text() == "「Compare the GPU prices of three clouds」"
    assert detail.folder_label.full_text() == "/data/bots/b/workspace/tasks/gpu-prices-3f2a1c"
    assert [r.line() for r in detail.runs] == ["Run 1 · started · 34 steps · 3 min"]
    assert detail.stop_button.isVisible()
    assert detail.back_button.text() == "‹ Chat"

    QTest.mouseClick(detail.back_button, Qt.MouseButton.LeftButton)
    await wait_until(task_window.chat_view.isVisible)
    assert task_window.shown_pane() is task_window.chat_view


async def test_the_detail_follows_its_task(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("Report", latest_line="Reading the changelogs")
    task_window.open_task(task.id)
    detail = task_detail(task_window)
    await wait_until(lambda: detail.latest_label.text() == "Reading the changelogs")

    tasks.update_task(task.id, latest_line="Writing the table", stage="working/asking")
    await wait_until(lambda: detail.latest_label.text() == "Writing the table")
    assert detail.stage_label.text() == "Working, asking you something"

    tasks.update_task(task.id, stage="ready")
    await wait_until(lambda: detail.stage_label.text() == "Done")
    assert not detail.stop_button.isVisible()  # nothing to stop once it ended
    assert detail.stage_dot.state == "idle"

    tasks.remove_task(task.id)
    await wait_until(detail.notice.isVisible)
    assert detail.notice.text() == "This task no longer exists."
    assert not detail.well.isVisible()


async def test_stop_calls_stop_task_without_waiting_for_it(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("Long job", latest_line="Working on it")
    other = tasks.add_task("Other job", latest_line="Also working")
    task_window.open_task(task.id)
    detail = task_detail(task_window)
    await wait_until(detail.stop_button.isVisible)

    tasks.stop_gate = asyncio.Event()  # the core takes its time
    QTest.mouseClick(detail.stop_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: tasks.stopped == [task.id])
    assert detail.stop_button.text() == "Stopping…"
    assert not detail.stop_button.isEnabled()
    # The window is not blocked meanwhile: another task opens and reads.
    task_window.open_task(other.id)
    await wait_until(lambda: detail.latest_label.text() == "Also working")
    assert detail.stop_button.isEnabled()
    task_window.open_task(task.id)
    await wait_until(lambda: detail.latest_label.text() == "Working on it")
    assert detail.stop_button.text() == "Stopping…"

    tasks.stop_gate.set()
    await wait_until(lambda: detail.stage_label.text() == "Stopped")
    assert not detail.stop_button.isVisible()


async def test_a_failed_stop_says_why_and_can_be_tried_again(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("Long job", stage="needs-you/answer")
    task_window.open_task(task.id)
    detail = task_detail(task_window)
    await wait_until(detail.stop_button.isVisible)

    tasks.stop_error = RuntimeError("the store is busy")
    QTest.mouseClick(detail.stop_button, Qt.MouseButton.LeftButton)

    await wait_until(detail.notice.isVisible)
    assert detail.notice.text() == "Couldn't stop it: the store is busy"
    assert detail.stop_button.isEnabled() and detail.stop_button.text() == "Stop"


async def test_the_task_list_shows_only_sections_with_tasks(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    now = time.time()
    tasks.add_task("GPU prices", latest_line="Compared 3 clouds", updated_at=now - 60)
    tasks.add_task("Old cleanup", stage="ready", updated_at=now - 40 * DAY)  # older than 30 days
    await task_window.refresh()

    button = task_window.findChild(QPushButton, "tasksButton")
    assert button is not None and button.isVisible() and button.text() == "Tasks"
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)

    listing = task_list(task_window)
    await wait_until(lambda: row_texts(task_window) == [("GPU prices", "Working  ›", "Compared 3 clouds")])
    assert listing.section_titles() == ["Working"]
    assert not listing.hint.isVisible()

    # The list follows the tasks while it is shown.
    asked = tasks.add_task("Quarterly deck", stage="needs-you/answer", latest_line="Which template?")
    tasks.add_task("Downloads", stage="ready", updated_at=now - DAY)
    await wait_until(lambda: listing.section_titles() == ["Working", "Needs you", "Done · last 30 days"])
    titles = [task.title for task in listing.shown_tasks()]
    assert titles == ["GPU prices", "Quarterly deck", "Downloads"]
    assert [dot_state(v.group, v.stage) for v in listing.shown_tasks()] == ["working", "needs", "idle"]

    # A row opens its task; back from there returns to the list.
    click_row(task_window, asked.id)
    detail = task_detail(task_window)
    await wait_until(lambda: detail.isVisible() and detail.latest_label.text() == "Which template?")
    assert detail.task_id == asked.id
    assert detail.back_button.text() == "‹ Tasks"
    QTest.mouseClick(detail.back_button, Qt.MouseButton.LeftButton)
    await wait_until(listing.isVisible)

    QTest.mouseClick(listing.back_button, Qt.MouseButton.LeftButton)
    await wait_until(task_window.chat_view.isVisible)
    assert not button.isChecked()


async def test_an_empty_task_list_says_so_quietly(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    await task_window.refresh()
    task_window.show_tasks()
    listing = task_list(task_window)
    await wait_until(listing.hint.isVisible)
    assert listing.hint.text() == "No background tasks yet"
    assert listing.section_titles() == []

    tasks.add_task("First one")
    await wait_until(lambda: listing.section_titles() == ["Working"])
    assert not listing.hint.isVisible()


async def test_the_task_list_in_chinese(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    i18n.use_language("zh")
    tasks.add_task("GPU 价格调研", stage="working/asking")
    tasks.add_task("清理旧构建", stage="failed")
    tasks.add_task("整理下载目录", stage="ready")
    listing = task_list(task_window)
    task_window.show_tasks()
    await wait_until(lambda: listing.section_titles() == ["进行中", "需要你", "已完成 · 最近 30 天"])
    assert tasks.list_reads[-1] == "zh"
    await wait_until(lambda: len(row_texts(task_window)) == 3)
    assert row_texts(task_window)[0] == ("GPU 价格调研", "进行中,有个问题等你回答  ›", "")
    assert [dot_state(v.group, v.stage) for v in listing.shown_tasks()] == ["working", "failed", "idle"]


async def test_an_empty_list_in_chinese(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    i18n.use_language("zh")
    task_window.show_tasks()
    listing = task_list(task_window)
    await wait_until(listing.hint.isVisible)
    assert listing.hint.text() == "还没有后台任务"


async def test_a_list_that_cannot_be_read_says_why(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    tasks.list_error = RuntimeError("database is locked")
    task_window.show_tasks()
    listing = task_list(task_window)
    await wait_until(listing.hint.isVisible)
    assert listing.hint.text() == "Couldn't load the tasks: database is locked"


async def test_a_task_result_says_where_it_came_from(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    conversation = facade.add_conversation("GPU")
    facade.add_message(conversation.id, "assistant", "Plain reply.")
    facade.add_message(conversation.id, "assistant", "GPU prices are in.", task_id="t_000000000001")
    facade.add_message(conversation.id, "error", "The price page needs a login.", task_id="t_000000000001")
    await task_window.refresh()

    widgets = task_window.chat_view.message_widgets()
    await wait_until(lambda: len(widgets) == 3 and all(w.isVisible() for w in widgets))
    plain, result, failure = widgets
    assert isinstance(failure, ErrorMessage)
    assert caption_of(plain) is None
    assert caption_of(result) == "From a background task"
    assert caption_of(failure) == "From a background task"
    # Above the text, not below it.
    caption = result.findChild(QLabel, "fromTaskCaption")
    assert caption is not None and caption.geometry().bottom() <= result.text_label.geometry().top()


async def test_the_result_caption_in_chinese(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    i18n.use_language("zh")
    conversation = facade.add_conversation("GPU")
    facade.add_message(conversation.id, "assistant", "GPU 价格调研好了。", task_id="t_000000000001")
    await task_window.refresh()
    [result] = task_window.chat_view.message_widgets()
    await wait_until(result.isVisible)
    assert caption_of(result) == "来自后台任务"


async def test_without_a_task_facade_there_is_no_tasks_button(
    window: MainWindow, facade: FakeChatFacade
) -> None:
    await window.refresh()
    button = window.findChild(QPushButton, "tasksButton")
    assert button is not None and not button.isVisible()
    assert window.task_list is None and window.task_detail is None


async def test_a_conversation_click_brings_the_chat_back(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    facade.add_conversation("Only one")
    await task_window.refresh()
    task_window.show_tasks()
    await wait_until(task_list(task_window).isVisible)

    view = task_window.conversation_list
    rect = view.visualRect(view.model().index(0, 0))
    QTest.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center()
    )

    await wait_until(task_window.chat_view.isVisible)


async def test_task_changes_are_folded_per_task() -> None:
    bus = EventBus()
    bridge = EventBridge(bus, task_interval_ms=20)
    seen: list[str] = []
    bridge.taskChanged.connect(seen.append)

    for _ in range(200):
        bus.publish(TaskChanged("t_a"))
        bus.publish(TaskChanged("t_b"))
    # Wait until every burst has gone out (nothing due), then count: one signal per task.
    await wait_until(lambda: len(seen) >= 2 and not bridge.pending())

    assert sorted(seen) == ["t_a", "t_b"]
    bridge.close()


async def test_over_a_real_host_the_chip_follows_the_task_and_opens_it(qtbot: QtBot, tmp_path: Path) -> None:
    """The real ChatService and TaskService behind the window: the chat agent starts a task, its reply
    carries the chip, the chip turns 已完成 when the task reports, and clicking it opens the task."""
    i18n.use_language("zh")
    script = SessionScript()
    script.add(
        "chat",
        [
            Reply.tool_calls(
                [ToolCallSpec("task_start", {"title": "Tidy downloads", "brief": "Sort the files."})]
            ),
            Reply.text("好,后台开始整理下载目录,好了告诉你。"),
        ],
    )
    script.add(
        "Tidy downloads",
        [
            bash("sleep 0.3"),  # long enough for the chip to be seen working first
            report("done", "sorted 12 files", message="整理好了:12 个文件分到 3 个文件夹。"),
        ],
    )
    async with ScriptedModelServer() as server:
        server.responder = script
        host = make_host(tmp_path / "data", server.base_url, home=tmp_path / "home")
        await host.start()
        bridge = EventBridge(host.bus)
        window = MainWindow(host.chat, bridge, tasks=host.tasks)
        qtbot.addWidget(window)
        window.show()
        try:
            await window.refresh()
            window.chat_view.composer.set_text("帮我整理一下下载目录")  # QTest types Latin-1 only
            QTest.keyClick(child(window, QPlainTextEdit, "composerInput"), Qt.Key.Key_Return)

            seen: set[str] = set()

            def done() -> bool:
                seen.update(chip_texts(window))
                return chip_texts(window) == ["后台任务 · Tidy downloads · 已完成 ›"]

            await wait_until(done, timeout=10)
            assert "后台任务 · Tidy downloads · 进行中 ›" in seen  # it was seen working first

            # The report reaches the chat through the outbox, a moment after the task's stage changes.
            def task_messages() -> list[MessageWidget]:
                return [w for w in window.chat_view.message_widgets() if w.view.task_id]

            await wait_until(lambda: bool(task_messages()), timeout=5)
            [result] = task_messages()
            await wait_until(result.isVisible)
            assert caption_of(result) == "来自后台任务"

            QTest.mouseClick(chips(window)[0], Qt.MouseButton.LeftButton)
            detail = task_detail(window)
            await wait_until(lambda: detail.isVisible() and detail.stage_label.text() == "已完成", timeout=5)
            assert detail.title() == "Tidy downloads"
            assert detail.words_label.text() == "「帮我整理一下下载目录」"
            assert "tasks/" in detail.folder_label.full_text()
            [first_run] = [r.line() for r in detail.runs]
            assert first_run.startswith("第 1 次 · 开始 · ") and " 步 · " in first_run
            # Its steps unfold from the run's stored 处理过程 (read from the real TaskService).
            detail.runs[0].set_expanded(True)
            await wait_until(lambda: bool(detail.runs[0].steps()), timeout=5)
            assert any("sleep 0.3" in step.title for step in detail.runs[0].steps())
            assert not detail.stop_button.isVisible()
        finally:
            window.shutdown()
            bridge.close()
            await host.stop()


async def test_a_task_row_moves_from_working_to_done_live(
    task_window: MainWindow, facade: FakeChatFacade, tasks: FakeTaskFacade
) -> None:
    gpu = tasks.add_task("GPU prices", latest_line="Compared 3 clouds")
    await task_window.refresh()
    task_window.show_tasks()
    listing = task_list(task_window)
    await wait_until(lambda: listing.section_titles() == ["Working"])

    tasks.update_task(gpu.id, stage="ready", latest_line="A100 is cheapest at X cloud")
    await wait_until(lambda: listing.section_titles() == ["Done · last 30 days"])
    [row] = listing.shown_tasks()
    assert (row.title, row.stage, row.latest_line) == ("GPU prices", "ready", "A100 is cheapest at X cloud")
    assert dot_state(row.group, row.stage) == "idle"  # grey: done
