"""Cost, retention and export on the desktop (issue 7, docs/desktop.md#task-detail and docs/cost.md), as a
person meets them: the task detail's 「约 $0.08 / $1.00」 with 改 (saved through the facade, a refusal said in
place), each run's cost, the folder's sizes and 「文件夹将于 12月2日 清理」 with 保留, 导出 on the task and
rule details (written off the UI thread to the path the person chose), a rule's cost this month, and the
budget card's [继续（+$1）] [停止] in needs-you."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from core.attention.items import budget_item
from core.errors import InvalidInputError
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade, run
from tests.ui.conftest import full_window, wait_until
from ui import export_action, i18n
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.rule_detail import RuleDetailBody
from ui.task_detail import TaskDetailView

MINUTE = 60
DAY = 24 * 3600


class FakeSaveDialog:
    """Stands in for the save dialog: answers with a path of its own (or None: cancelled) and records what
    it was offered."""

    def __init__(self, answer: Path | None) -> None:
        self.answer = answer
        self.suggested: list[Path] = []

    async def __call__(self, parent: QWidget, suggested: Path) -> Path | None:
        self.suggested.append(suggested)
        await asyncio.sleep(0)
        return self.answer


@pytest.fixture
def save_dialog(tmp_path: Path) -> FakeSaveDialog:
    return FakeSaveDialog(tmp_path / "exported.md")


@pytest.fixture
def view(qtbot: QtBot, tasks: FakeTaskFacade, save_dialog: FakeSaveDialog) -> Iterator[TaskDetailView]:
    made = TaskDetailView(tasks, ask_path=save_dialog)
    qtbot.addWidget(made)
    made.resize(760, 900)
    made.show()
    yield made
    made.shutdown()


async def shown(view: TaskDetailView, task_id: str) -> None:
    view.show_task(task_id)
    await wait_until(
        lambda: view.detail is not None and view.detail.task.id == task_id and view.well.isVisible()
    )


async def reread(view: TaskDetailView) -> None:
    await view.reload()


# -- what was spent --------------------------------------------------------------------------------------


async def test_the_detail_says_what_was_spent_against_the_budget_and_each_run_its_cost(
    view: TaskDetailView, tasks: FakeTaskFacade
) -> None:
    now = time.time()
    runs = [
        run("launch", "ended", "needs_you", 21, now - 12 * MINUTE, now - 9 * MINUTE, cost_usd=0.05),
        run("answer", "ended", "done", 3, now - 8 * MINUTE, now - 7 * MINUTE, unpriced_calls=2),
        run("followup", "ended", "done", 1, now - 6 * MINUTE, now - 6 * MINUTE),
    ]
    task = tasks.add_task(
        "GPU prices",
        spent_usd=0.08,
        budget_usd=1.0,
        spent_other={"CNY": 0.5},
        unpriced_calls=2,
        created_at=now - 12 * MINUTE,
        runs=runs,
    )
    await shown(view, task.id)

    assert view.spent_label.text() == "·  12 min  ·  about $0.08 / $1.00 · about ¥0.50"
    # The 预算 section also says how many calls had no price, since some did.
    assert view.body.budget_label.text() == "about $0.08 / $1.00 · about ¥0.50 · 2 more calls not priced"
    assert [r.line() for r in view.runs] == [
        "Run 1 · started · 21 steps · 3 min · answered · about $0.05",
        "Run 2 · after your answer · 3 steps · 1 min · not priced",
        "Run 3 · after your follow-up · 1 step · under a minute",  # it cost nothing: nothing said
    ]


async def test_in_chinese_money_reads_as_the_mock_up(view: TaskDetailView, tasks: FakeTaskFacade) -> None:
    i18n.use_language("zh")
    priced = tasks.add_task("GPU 价格调研", spent_usd=0.08, budget_usd=1.0)
    unpriced = tasks.add_task("本地模型", spent_usd=0.0, budget_usd=2.0, unpriced_calls=4)
    tiny = tasks.add_task("小任务", spent_usd=0.001, budget_usd=1.0)

    await shown(view, priced.id)
    assert view.body.budget_label.text() == "约 $0.08 / $1.00"
    await shown(view, unpriced.id)
    assert view.body.budget_label.text() == "未定价 / $2.00"
    await shown(view, tiny.id)
    assert view.body.budget_label.text() == "不到 $0.01 / $1.00"


# -- 改: the budget --------------------------------------------------------------------------------------


async def test_change_saves_the_budget_through_the_facade_without_waiting(
    view: TaskDetailView, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("GPU prices", spent_usd=0.08, budget_usd=1.0)
    await shown(view, task.id)
    budget = view.budget
    assert budget.change_button.isVisible() and not budget.editor.isVisible()

    QTest.mouseClick(budget.change_button, Qt.MouseButton.LeftButton)
    assert budget.editor.isVisible() and not budget.change_button.isVisible()
    assert budget.input.text() == "1.00"

    tasks.budget_gate = asyncio.Event()  # the facade answers only when the test says so
    budget.input.setText("2.5")
    QTest.mouseClick(budget.save_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: tasks.budget_calls == [(task.id, None, 2.5)])
    # The loop runs on while it saves; the button can't be pressed twice.
    assert not budget.save_button.isEnabled()
    assert budget.save_button.text() == "Saving…"
    QTest.mouseClick(budget.save_button, Qt.MouseButton.LeftButton)
    assert len(tasks.budget_calls) == 1

    tasks.budget_gate.set()
    await wait_until(lambda: not budget.editor.isVisible())
    assert view.body.budget_label.text() == "about $0.08 / $2.50"
    await wait_until(lambda: view.spent_label.text().endswith("about $0.08 / $2.50"))
    assert budget.change_button.isVisible()
    assert budget.save_button.isEnabled() and budget.save_button.text() == "Save"


async def test_a_refused_budget_says_why_in_place_and_changes_nothing(
    view: TaskDetailView, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("GPU prices", spent_usd=0.5, budget_usd=1.0)
    await shown(view, task.id)
    budget = view.budget
    QTest.mouseClick(budget.change_button, Qt.MouseButton.LeftButton)

    async def refused(text: str) -> str:
        calls = len(tasks.budget_calls)
        budget.input.setText(text)
        QTest.keyClick(budget.input, Qt.Key.Key_Return)
        await wait_until(lambda: len(tasks.budget_calls) == calls + 1 and budget.error.isVisible())
        return budget.error.text()

    assert await refused("0") == "The budget must be more than $0"
    assert await refused("1200") == "The budget can be at most $1,000.00"
    assert await refused("0.2") == "It can't be less than what is already spent (about $0.50)"
    # A refusal the UI has no words of its own for is said as the core put it.
    tasks.budget_error = InvalidInputError("budgetUsd", "budgets are frozen while it settles")
    assert await refused("3") == "budgets are frozen while it settles"
    tasks.budget_error = None

    # Not a number: said at once, the facade is not asked.
    calls = len(tasks.budget_calls)
    budget.input.setText("lots")
    QTest.mouseClick(budget.save_button, Qt.MouseButton.LeftButton)
    assert budget.error.text() == "Write an amount, such as 2.00"
    assert len(tasks.budget_calls) == calls

    # Nothing changed: the shown budget and the task's are the old ones, and the editor is still open.
    assert budget.editor.isVisible() and budget.save_button.isEnabled()
    assert view.body.budget_label.text() == "about $0.50 / $1.00"
    assert (await tasks.detail(task.id)).task.budget_usd == 1.0

    QTest.mouseClick(budget.cancel_button, Qt.MouseButton.LeftButton)
    assert not budget.editor.isVisible() and not budget.error.isVisible()


async def test_an_ended_task_has_no_budget_to_change(view: TaskDetailView, tasks: FakeTaskFacade) -> None:
    task = tasks.add_task("Done already", stage="ready", spent_usd=0.2)
    await shown(view, task.id)
    assert view.body.budget_label.text() == "about $0.20 / $1.00"
    assert not view.budget.change_button.isVisible()


# -- 文件夹: sizes, the cleanup date and 保留 ----------------------------------------------------------------


async def test_the_folder_says_its_sizes_and_its_cleanup_date_and_keep_takes_the_date_away(
    view: TaskDetailView, tasks: FakeTaskFacade, tmp_path: Path
) -> None:
    this_year = datetime.now().year
    cleanup = datetime(this_year, 12, 2, 12, 0).timestamp()
    task = tasks.add_task(
        "GPU prices",
        stage="ready",
        folder=str(tmp_path),
        folder_bytes=1_500_000,
        session_bytes=348_160,
        cleanup_at=cleanup,
    )
    await shown(view, task.id)
    folder = view.folder
    assert folder.folder_size.text() == "1.4 MB"
    assert folder.session_size.text() == "Session record 340 KB"
    assert folder.cleanup_shown
    assert folder.cleanup_label.text() == "The folder will be cleaned up on Dec 2"
    assert folder.keep_button.text() == "Keep"

    QTest.mouseClick(folder.keep_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: tasks.kept == [task.id])
    await wait_until(lambda: not folder.cleanup_shown)
    await reread(view)  # read again: still no date
    assert not folder.cleanup_shown
    assert folder.folder_size.text() == "1.4 MB"


async def test_no_date_says_nothing_about_cleanup_and_a_failed_keep_says_why(
    view: TaskDetailView, tasks: FakeTaskFacade, tmp_path: Path
) -> None:
    plain = tasks.add_task("No date", folder=str(tmp_path))
    await shown(view, plain.id)
    assert not view.folder.cleanup_shown
    assert not view.folder.session_size.isVisible()

    i18n.use_language("zh")
    later = datetime(datetime.now().year + 1, 1, 3, 12, 0).timestamp()
    dated = tasks.add_task("有日期", folder=str(tmp_path), cleanup_at=later)
    await shown(view, dated.id)
    assert view.folder.cleanup_label.text() == f"文件夹将于 {datetime.now().year + 1}年1月3日 清理"
    assert view.folder.keep_button.text() == "保留"

    tasks.keep_error = RuntimeError("磁盘忙")
    QTest.mouseClick(view.folder.keep_button, Qt.MouseButton.LeftButton)
    await wait_until(view.folder.keep_error.isVisible)
    assert view.folder.keep_error.text() == "没能保留：磁盘忙"
    assert view.folder.cleanup_shown and view.folder.keep_button.isEnabled()


# -- 导出 --------------------------------------------------------------------------------------------------


async def test_export_writes_the_facades_markdown_off_the_ui_thread(
    view: TaskDetailView,
    tasks: FakeTaskFacade,
    save_dialog: FakeSaveDialog,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writers: list[threading.Thread] = []
    real_write = export_action._write

    def write(path: Path, text: str) -> None:
        writers.append(threading.current_thread())
        real_write(path, text)

    monkeypatch.setattr(export_action, "_write", write)
    tasks.markdown = "# GPU prices\n\nA100 is cheapest on C.\n"
    task = tasks.add_task("GPU prices: A100/H100?")
    await shown(view, task.id)
    assert view.export.button.isVisible() and view.export.button.text() == "Export"

    QTest.mouseClick(view.export.button, Qt.MouseButton.LeftButton)
    assert not view.export.button.isEnabled()  # one export at a time
    target = save_dialog.answer
    assert target is not None
    await wait_until(lambda: view.export.status.isVisible() and view.export.button.isEnabled())
    assert target.read_text(encoding="utf-8") == "# GPU prices\n\nA100 is cheapest on C.\n"
    assert tasks.exports == [(task.id, "en")]
    assert view.export.status.text() == f"Exported to {target}"
    assert view.export.status.property("role") == "faint"
    # The title, made safe for a file name, is what the dialog suggests.
    assert [p.name for p in save_dialog.suggested] == ["GPU prices A100 H100.md"]
    assert writers and writers[0] is not threading.main_thread()
    assert view.export.button.text() == "Export"


async def test_a_cancelled_export_writes_nothing_and_a_failed_one_says_why(
    view: TaskDetailView, tasks: FakeTaskFacade, save_dialog: FakeSaveDialog
) -> None:
    task = tasks.add_task("GPU prices")
    await shown(view, task.id)
    target = save_dialog.answer
    assert target is not None

    save_dialog.answer = None  # the person closed the dialog
    QTest.mouseClick(view.export.button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: len(save_dialog.suggested) == 1 and view.export.button.isEnabled())
    assert tasks.exports == [] and not target.exists() and not view.export.status.isVisible()

    save_dialog.answer = target
    tasks.export_error = RuntimeError("the store is busy")
    QTest.mouseClick(view.export.button, Qt.MouseButton.LeftButton)
    await wait_until(view.export.status.isVisible)
    assert view.export.status.text() == "Couldn't export: the store is busy"
    assert view.export.status.property("role") == "danger"
    assert not target.exists() and view.export.button.isEnabled()

    # A folder that can't be written to says so too.
    tasks.export_error = None
    save_dialog.answer = target.parent / "missing" / "out.md"
    QTest.mouseClick(view.export.button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: "No such file" in view.export.status.text())


async def test_an_export_that_fails_halfway_leaves_the_earlier_file_as_it_was(
    view: TaskDetailView, tasks: FakeTaskFacade, save_dialog: FakeSaveDialog
) -> None:
    task = tasks.add_task("GPU prices")
    await shown(view, task.id)
    target = save_dialog.answer
    assert target is not None
    target.write_text("# last week's export\n", encoding="utf-8")

    tasks.markdown = "# GPU prices\n\n" + "\ud800"  # can't be written as UTF-8: the write fails midway
    QTest.mouseClick(view.export.button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: view.export.status.property("role") == "danger")
    assert target.read_text(encoding="utf-8") == "# last week's export\n"
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temporary file left behind


async def test_a_rule_exports_too(qtbot: QtBot, save_dialog: FakeSaveDialog) -> None:
    rules = FakeRuleFacade()
    rules.markdown = "# Watch X\n\n- 2 runs\n"
    rule = rules.add_rule("Watch X", mode="observe")
    body = RuleDetailBody(rules, ask_path=save_dialog)
    qtbot.addWidget(body)
    body.show()
    try:
        await body.show_rule(rule.id)
        assert body.export_button.isVisible() and body.export_button.text() == "Export"
        QTest.mouseClick(body.export_button, Qt.MouseButton.LeftButton)
        await wait_until(body.export.status.isVisible)
        target = save_dialog.answer
        assert target is not None and target.read_text(encoding="utf-8") == "# Watch X\n\n- 2 runs\n"
        assert rules.exports == [(rule.id, "en")]
        assert [p.name for p in save_dialog.suggested] == ["Watch X.md"]
    finally:
        body.shutdown()


# -- rules: this month's cost -----------------------------------------------------------------------------


async def test_a_rule_says_its_cost_this_month_in_its_row_its_detail_and_each_run(
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
        free = rules.add_rule("Nothing spent yet")
        rule = rules.add_rule("Watch X", mode="observe", month_cost_usd=0.4, month_budget_usd=3.0)
        now = time.time()
        rules.add_run(rule.id, now - DAY, cost_usd=0.03)
        rules.add_run(rule.id, now - 60, cost_usd=0.001)
        await window.refresh()
        await wait_until(lambda: window.bot_view("bot-1") is not None)
        window.show_bot_panel("bot-1")
        panel = window.bot_panel
        assert panel is not None
        await wait_until(lambda: len(panel.rule_rows) == 2)
        costs = {row.rule.id: row.cost_text for row in panel.rule_rows}
        assert costs == {rule.id: "This month about $0.40 / $3.00", free.id: ""}  # free takes no space

        await panel.open_rule(rule.id)
        detail = panel.rule_detail
        assert detail is not None
        await wait_until(lambda: len(detail.run_rows) == 2)
        assert detail.cost_label.text() == "This month about $0.40 / $3.00 · at most $0.10 a run"
        assert [row.cost.text() for row in detail.run_rows] == ["under $0.01", "about $0.03"]

        # Paused at its monthly budget: red, and it says so (its 继续 is in needs-you).
        rules.set_month_cost(rule.id, 3.0)
        rules.set_paused(rule.id, "budget")
        await wait_until(lambda: detail.state_label.text() == "Paused: this month's budget is used up")
        assert detail.state_dot.state == "failed"
        assert detail.cost_label.text().startswith("This month about $3.00 / $3.00")
    finally:
        window.shutdown()


async def test_in_chinese_a_rule_paused_at_its_budget_reads_as_asked(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
) -> None:
    i18n.use_language("zh")
    rules = FakeRuleFacade(facade.bus)
    window = full_window(qtbot, facade, bridge, tasks, bots, rules)
    try:
        facade.add_conversation("GPU")
        rules.add_rule("看 X 价格", month_cost_usd=3.0, month_budget_usd=3.0, paused_reason="budget")
        await window.refresh()
        await wait_until(lambda: window.bot_view("bot-1") is not None)
        window.show_bot_panel("bot-1")
        panel = window.bot_panel
        assert panel is not None
        await wait_until(lambda: len(panel.rule_rows) == 1)
        row = panel.rule_rows[0]
        assert row.state_text == "本月预算用完，已暂停"
        assert row.cost_text == "本月 约 $3.00 / $3.00"
        assert row.dot.state == "failed"
    finally:
        window.shutdown()


# -- needs-you: the budget card ---------------------------------------------------------------------------


async def test_the_budget_card_offers_continue_and_stop_and_answers_through_the_facade(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, tasks: FakeTaskFacade
) -> None:
    attention = FakeAttentionFacade(facade)
    window = MainWindow(facade, bridge, tasks=tasks, attention=attention)
    qtbot.addWidget(window)
    window.show()
    try:
        item = attention.add(
            budget_item("t_000000000001", "bot-1", "GPU prices", 1.0, 1.0, time.time(), lang="en")
        )
        await window.refresh()
        QTest.mouseClick(window.needs_you_button, Qt.MouseButton.LeftButton)
        needs = window.needs_you
        assert needs is not None
        await wait_until(lambda: needs.row(item.id) is not None and needs.isVisible())
        row = needs.row(item.id)
        assert row is not None
        assert row.subject.text() == "GPU prices · budget used up"
        assert row.line.text() == "Spent about $1.00 of $1.00. Continue or stop?"
        assert row.button_texts() == ["Continue (+$1)", "Stop"]  # no free-text reply for a budget
        assert row.dot.state == "needs"

        QTest.mouseClick(row.button("Continue (+$1)"), Qt.MouseButton.LeftButton)
        # The button says what 继续 gives; the answer is the option itself.
        await wait_until(lambda: attention.acted == [(item.id, "answer", {"answer": "Continue"})])
    finally:
        window.shutdown()


async def test_in_chinese_the_budget_card_reads_continue_plus_one_dollar(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, tasks: FakeTaskFacade
) -> None:
    i18n.use_language("zh")
    attention = FakeAttentionFacade(facade)
    window = MainWindow(facade, bridge, tasks=tasks, attention=attention)
    qtbot.addWidget(window)
    window.show()
    try:
        item = attention.add(budget_item("t_000000000002", "bot-1", "GPU 价格调研", 1.0, 1.0, time.time()))
        await window.refresh()
        QTest.mouseClick(window.needs_you_button, Qt.MouseButton.LeftButton)
        needs = window.needs_you
        assert needs is not None
        await wait_until(lambda: needs.row(item.id) is not None)
        row = needs.row(item.id)
        assert row is not None
        assert row.subject.text() == "GPU 价格调研 · 预算用完"
        assert row.button_texts() == ["继续（+$1）", "停止"]
        QTest.mouseClick(row.button("停止"), Qt.MouseButton.LeftButton)
        await wait_until(lambda: attention.acted == [(item.id, "answer", {"answer": "停止"})])
    finally:
        window.shutdown()
