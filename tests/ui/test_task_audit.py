"""A task's audit list in its detail (docs/desktop.md#task-detail): the trail's lines newest first, a chip per
group that reads that group, a refusal with its rule and reason, a sentence when a group is empty, and a
failed read that says why and offers 重试. Reads go through the TaskFacade and never pile up while a busy
task changes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.audit.views import AUDIT_GROUPS
from core.errors import NotFoundError
from tests.fakes.fake_tasks import FakeTaskFacade, run
from tests.ui.conftest import wait_until
from ui import i18n
from ui.i18n import t
from ui.task_audit import FIRST_ROWS, MORE_ROWS, TaskAuditList
from ui.task_detail import TaskDetailBody

START = datetime(2026, 12, 6, 10, 0, 0).astimezone()


def event(minute: int, kind: str, target: str, **more: Any) -> dict[str, Any]:
    """An event as the recorder writes it, `minute` minutes after START."""
    made: dict[str, Any] = {
        "at": (START + timedelta(minutes=minute)).isoformat(timespec="milliseconds"),
        "kind": kind,
        "target": target,
        "decision": "allow",
        "result": "ok",
    }
    made.update(more)
    return made


TRAIL = [
    event(1, "command.exec", "pytest -q"),
    event(2, "path.write", "/home/me/notes/todo.md"),
    event(
        3,
        "guard.deny",
        "rm -rf ~",
        decision="deny",
        result="blocked",
        rule="cmd/recursive-force-delete",
        reason="it would delete the home folder",
    ),
    event(4, "command.exec", "make build", result="failed", exitCode=2),
    event(5, "channel.send", "c_42", result="delivered"),
]


@pytest.fixture
def audit(qtbot: QtBot, tasks: FakeTaskFacade) -> Iterator[TaskAuditList]:
    made = TaskAuditList(tasks, now=(START + timedelta(hours=1)).timestamp, reread_ms=300)
    qtbot.addWidget(made)
    made.resize(560, 600)
    made.set_shown(True)
    made.show()
    yield made
    made.shutdown()


async def shown(audit: TaskAuditList, task_id: str) -> None:
    reads = len(audit._tasks.audit_reads)  # type: ignore[attr-defined]
    audit.show_task(task_id)
    await wait_until(lambda: len(audit._tasks.audit_reads) > reads and not audit.reading)  # type: ignore[attr-defined]


def targets(audit: TaskAuditList) -> list[str]:
    return [row.target.full_text() for row in audit.rows if row.isVisibleTo(audit)]


async def test_the_list_shows_the_trail_newest_first(audit: TaskAuditList, tasks: FakeTaskFacade) -> None:
    task = tasks.add_task("Tidy notes")
    tasks.set_audit(task.id, TRAIL)
    await shown(audit, task.id)
    assert tasks.audit_reads == [(task.id, "all")]
    assert targets(audit) == ["c_42", "make build", "rm -rf ~", "/home/me/notes/todo.md", "pytest -q"]
    first = audit.rows[0]
    assert first.time_label.text() == "10:05:00"
    assert first.kind_label.text() == t("task_audit.kind.channel.send")
    assert first.result_label.text() == t("task_audit.result.delivered")
    assert audit.rows[1].result_label.text() == t("task_audit.result.exit_code", code=2)
    assert audit.rows[1].result_label.property("role") == "danger"
    assert audit.chip_row.isVisible() and not audit.status.isVisible()
    # Targets start at one edge: every row shares the time and kind columns.
    assert len({(row.time_label.minimumWidth(), row.kind_label.minimumWidth()) for row in audit.rows}) == 1


async def test_a_blocked_line_shows_its_rule_and_reason(audit: TaskAuditList, tasks: FakeTaskFacade) -> None:
    task = tasks.add_task("Tidy notes")
    tasks.set_audit(task.id, TRAIL)
    await shown(audit, task.id)
    blocked = audit.rows[2]
    assert blocked.target.full_text() == "rm -rf ~"
    assert blocked.result_label.text() == t("task_audit.result.blocked")
    assert blocked.result_label.property("role") == "danger"
    assert blocked.why.isVisible()
    assert blocked.why.text() == t(
        "task_audit.rule_reason", rule="cmd/recursive-force-delete", reason="it would delete the home folder"
    )
    assert not audit.rows[0].why.isVisible()  # a plain send says nothing under it


async def test_picking_a_group_reads_that_group(audit: TaskAuditList, tasks: FakeTaskFacade) -> None:
    task = tasks.add_task("Tidy notes")
    tasks.set_audit(task.id, TRAIL)
    await shown(audit, task.id)
    QTest.mouseClick(audit.chips["commands"], Qt.MouseButton.LeftButton)
    await wait_until(lambda: tasks.audit_reads[-1] == (task.id, "commands") and not audit.reading)
    assert audit.group == "commands"
    assert audit.chips["commands"].isChecked() and not audit.chips["all"].isChecked()
    await wait_until(lambda: targets(audit) == ["make build", "pytest -q"])

    QTest.mouseClick(audit.chips["blocked"], Qt.MouseButton.LeftButton)
    await wait_until(lambda: targets(audit) == ["rm -rf ~"])
    assert tasks.audit_reads[-1] == (task.id, "blocked")


async def test_an_empty_group_says_so(audit: TaskAuditList, tasks: FakeTaskFacade) -> None:
    quiet = tasks.add_task("Quiet task")
    await shown(audit, quiet.id)
    assert audit.status.isVisible() and audit.status.text() == t("task_audit.empty.all")
    assert not audit.well.isVisible()
    assert not audit.chip_row.isVisible()  # nothing to narrow

    busy = tasks.add_task("Busy task")
    tasks.set_audit(busy.id, [event(1, "command.exec", "ls")])
    await shown(audit, busy.id)
    QTest.mouseClick(audit.chips["sends"], Qt.MouseButton.LeftButton)
    await wait_until(lambda: audit.status.text() == t("task_audit.empty.sends"))
    assert audit.status.isVisible() and not audit.well.isVisible()
    assert audit.chip_row.isVisible()  # the way back to 全部


def test_every_group_has_its_words() -> None:
    for lang in ("zh", "en"):
        i18n.use_language(lang)
        for group in AUDIT_GROUPS:
            for key in (f"task_audit.group.{group}", f"task_audit.empty.{group}"):
                assert t(key) != key
    i18n.use_language("zh")
    assert [t(f"task_audit.group.{g}") for g in AUDIT_GROUPS] == [
        "全部",
        "拦下的",
        "命令",
        "文件",
        "外部工具",
        "审批",
        "发送",
    ]


async def test_a_failed_read_says_why_and_retry_reads_again(
    audit: TaskAuditList, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("Tidy notes")
    tasks.set_audit(task.id, TRAIL)
    tasks.audit_error = OSError("the audit file cannot be read")
    await shown(audit, task.id)
    assert audit.isVisible()
    assert audit.status.text() == t("task_audit.failed", reason="the audit file cannot be read")
    assert audit.status.property("role") == "danger"
    assert audit.retry_button.isVisible()
    assert not audit.well.isVisible()

    tasks.audit_error = None
    reads = len(tasks.audit_reads)
    QTest.mouseClick(audit.retry_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: len(tasks.audit_reads) > reads and len(targets(audit)) == len(TRAIL))
    assert not audit.status.isVisible() and not audit.retry_button.isVisible()


async def test_a_busy_task_is_reread_once_per_interval(audit: TaskAuditList, tasks: FakeTaskFacade) -> None:
    task = tasks.add_task("Tidy notes")
    await shown(audit, task.id)
    assert audit.status.text() == t("task_audit.empty.all")
    tasks.set_audit(task.id, TRAIL[:1])
    for _ in range(5):  # a run's steps, each announced as a change of its task
        audit.on_task_changed(task.id)
    assert len(tasks.audit_reads) == 1  # within the interval of the first read: owed, not read
    await wait_until(lambda: targets(audit) == ["pytest -q"])
    assert len(tasks.audit_reads) == 2  # the burst, once


async def test_more_lines_are_built_on_demand(audit: TaskAuditList, tasks: FakeTaskFacade) -> None:
    task = tasks.add_task("Many commands")
    tasks.set_audit(task.id, [event(n % 50, "command.exec", f"echo {n}") for n in range(FIRST_ROWS + 15)])
    await shown(audit, task.id)
    assert len(audit.lines) == FIRST_ROWS + 15
    assert len(audit.rows) == FIRST_ROWS
    assert audit.more_button.isVisible()
    assert audit.more_button.text() == t("task_audit.more", n=min(15, MORE_ROWS))
    QTest.mouseClick(audit.more_button, Qt.MouseButton.LeftButton)
    assert len(audit.rows) == FIRST_ROWS + 15 and not audit.more_button.isVisible()


async def test_a_chinese_line_reads_in_chinese(qtbot: QtBot, tasks: FakeTaskFacade) -> None:
    i18n.use_language("zh")
    zh = TaskAuditList(tasks, now=(START + timedelta(days=2)).timestamp)
    qtbot.addWidget(zh)
    zh.set_shown(True)
    task = tasks.add_task("整理笔记")
    tasks.set_audit(
        task.id,
        [event(1, "approval", "rm -rf build", decision="allow", result="approved", actor="person")],
    )
    zh.show_task(task.id)
    await wait_until(lambda: bool(zh.rows) and not zh.reading)
    row = zh.rows[0]
    assert row.kind_label.text() == "审批"
    assert row.result_label.text() == "你批准了"
    assert row.time_label.text() == "12月6日 10:01"  # another day: the date, then the minute
    zh.shutdown()


# -- in the task detail ------------------------------------------------------------------------------------


@pytest.fixture
def body(qtbot: QtBot, tasks: FakeTaskFacade) -> Iterator[TaskDetailBody]:
    made = TaskDetailBody(tasks)
    qtbot.addWidget(made)
    made.resize(640, 900)
    made.show()
    yield made
    made.shutdown()


async def test_the_detail_shows_the_list_under_the_runs_and_follows_the_task(
    body: TaskDetailBody, tasks: FakeTaskFacade
) -> None:
    task = tasks.add_task("Tidy notes", runs=[run(steps=3)])
    tasks.set_audit(task.id, TRAIL[:2])
    body.show_task(task.id)
    await wait_until(lambda: body.detail is not None and body.audit.isVisible() and bool(body.audit.rows))
    assert tasks.audit_reads == [(task.id, "all")]
    assert body.runs_well.isVisible()
    layout = body.layout()
    assert layout is not None
    assert layout.indexOf(body.runs_well) < layout.indexOf(body.audit) < layout.indexOf(body.action_row)
    await wait_until(lambda: body.audit.geometry().top() > body.runs_well.geometry().bottom())

    tasks.set_audit(task.id, TRAIL[:3])
    body.on_task_changed(task.id)
    await wait_until(lambda: targets(body.audit)[0] == "rm -rf ~")


async def test_a_task_gone_hides_the_list(body: TaskDetailBody, tasks: FakeTaskFacade) -> None:
    task = tasks.add_task("Tidy notes")
    tasks.set_audit(task.id, TRAIL)
    body.show_task(task.id)
    await wait_until(lambda: body.audit.isVisible() and bool(body.audit.rows))
    tasks.remove_task(task.id)
    body.on_task_changed(task.id)
    await wait_until(lambda: body.detail is None)
    assert not body.audit.isVisible()


async def test_a_gone_task_reads_as_nothing(audit: TaskAuditList, tasks: FakeTaskFacade) -> None:
    tasks.audit_error = NotFoundError("task", "t_gone")
    await shown(audit, "t_gone")
    assert audit.error == "" and not audit.retry_button.isVisible()  # the detail says it is gone
