"""The task detail's plan and goal (docs/desktop.md#the-plan-and-goal-wells): a planned task's subtasks,
each with its stage, spend and steps and what it waits for; a goal task's criteria, each with its last
verdict and where it came from.

    计划 · 3 部分
    ● 查 AWS 价格              已完成 · $0.02 · 6 步
    ● 写对比                   进行中 · $0.01 · 2 步 · 在「查 AWS 价格」之后
    验收标准 · 第 2 轮，共 5 轮
    ✓ 测试通过        命令 · `pytest -q` exited 0
    ✗ 报告里有结论     模型 · not met: no conclusion

Drawn from the TaskDetail the detail already read: nothing here reads on its own.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from core.tasks.views import TaskDetail
from ui import theme
from ui.elided_text import ElidedText
from ui.i18n import t
from ui.status_dot import StatusDot
from ui.task_chip import dot_state
from ui.task_list import section_label

DETAIL_LINES = 2  # a verdict's detail (a command's output) is cut here; the full text is the tooltip


def _money(usd: float) -> str:
    return f"${usd:.2f}"


def subtask_meta(sub: dict[str, Any], titles: dict[str, str]) -> str:
    """「已完成 · $0.02 · 6 步 · 在「查 AWS 价格」之后」: its stage, spend, steps and what it waits for."""
    bits = [str(sub.get("stageLabel") or t("plan.not_started"))]
    if sub.get("runs"):
        bits.append(_money(float(sub.get("costUsd") or 0.0)))
        bits.append(t("plan.steps", count=int(sub.get("steps") or 0)))
    after = [titles.get(d, d) for d in sub.get("dependsOn") or ()]
    if after and not sub.get("runs"):
        bits.append(t("plan.after", titles=t("plan.and").join(t("plan.quoted", title=a) for a in after)))
    return " · ".join(bits)


def verdict_meta(criterion: dict[str, Any]) -> tuple[str, str]:
    """The mark and the line under a criterion: (✓/✗/·, 「命令 · what it saw」)."""
    verdict = criterion.get("verdict")
    if not verdict:
        return "·", t("goal.unchecked")
    source = t(f"goal.source.{verdict.get('source', 'model')}")
    return ("✓" if verdict.get("passed") else "✗"), f"{source} · {verdict.get('detail', '')}"


class _Row(QWidget):
    """One line of a well: a leading mark (a dot or ✓/✗), the title, and a faint line under it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("taskPlanRow")
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 8, 12, 8)
        row.setSpacing(8)
        self.dot = StatusDot("idle", 8, self)
        self.mark = QLabel(self)
        self.mark.setObjectName("taskPlanMark")
        column = QVBoxLayout()
        column.setSpacing(2)
        self.title = QLabel(self)
        self.title.setObjectName("taskPlanTitle")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.meta = ElidedText("", DETAIL_LINES, self)
        self.meta.setObjectName("taskPlanMeta")
        self.meta.setFont(theme.font("small"))
        column.addWidget(self.title)
        column.addWidget(self.meta)
        row.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.mark, 0, Qt.AlignmentFlag.AlignTop)
        row.addLayout(column, 1)

    def set_line(self, title: str, meta: str, *, dot: str = "", mark: str = "") -> None:
        self.title.setText(title)
        self.meta.set_text(meta)
        self.meta.set_color(theme.colors().muted)
        self.meta.setToolTip(meta)
        self.dot.setVisible(bool(dot))
        if dot:
            self.dot.set_state(dot_state(dot, dot))
        self.mark.setVisible(bool(mark))
        self.mark.setText(mark)
        self.mark.setProperty("verdict", {"✓": "passed", "✗": "failed"}.get(mark, "open"))
        self.mark.style().unpolish(self.mark)
        self.mark.style().polish(self.mark)


class _Well(QWidget):
    """A caption and a well of rows, hidden while there is nothing to show."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 6, 0, 0)
        column.setSpacing(8)
        self.caption = section_label("", self)
        self.caption.setContentsMargins(4, 0, 0, 0)
        column.addWidget(self.caption)
        self.well = QFrame(self)
        self.well.setObjectName("taskWell")
        self._rows = QVBoxLayout(self.well)
        self._rows.setContentsMargins(0, 0, 0, 0)
        self._rows.setSpacing(0)
        column.addWidget(self.well)
        self.rows: list[_Row] = []
        self.hide()

    def show_rows(self, caption: str, count: int) -> list[_Row]:
        self.caption.setText(caption)
        while len(self.rows) < count:
            row = _Row(self.well)
            self._rows.addWidget(row)
            self.rows.append(row)
        for n, row in enumerate(self.rows):
            row.setVisible(n < count)
        self.setVisible(count > 0)
        return self.rows[:count]


class TaskPlanSection(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("taskPlanSection")
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        self.plan = _Well(self)
        self.goal = _Well(self)
        column.addWidget(self.plan)
        column.addWidget(self.goal)
        self.hide()

    def set_detail(self, detail: TaskDetail) -> None:
        self._set_plan(detail.plan)
        self._set_goal(detail.goal)
        self.setVisible(self.plan.isVisibleTo(self) or self.goal.isVisibleTo(self))

    def _set_plan(self, plan: dict[str, Any] | None) -> None:
        subtasks: list[dict[str, Any]] = list(plan.get("subtasks") or ()) if plan else []
        if plan is not None and not subtasks:
            # Planning: the planner has not answered yet (or failed); say so rather than show nothing.
            row = self.plan.show_rows(t("plan.caption_planning"), 1)[0]
            row.set_line(t("plan.planning"), "", dot="working" if plan.get("phase") == "planning" else "idle")
            return
        titles = {str(s.get("id")): str(s.get("title")) for s in subtasks}
        rows = self.plan.show_rows(t("plan.caption", count=len(subtasks)), len(subtasks))
        for row, sub in zip(rows, subtasks, strict=True):
            group = "failed" if sub.get("stage") == "failed" else str(sub.get("group") or "idle")
            row.set_line(str(sub.get("title")), subtask_meta(sub, titles), dot=group)

    def _set_goal(self, goal: dict[str, Any] | None) -> None:
        criteria: list[dict[str, Any]] = list(goal.get("criteria") or ()) if goal else []
        if goal is None or not criteria:
            self.goal.show_rows("", 0)
            return
        if goal.get("round"):
            caption = t("goal.caption_round", round=goal["round"], rounds=goal.get("maxRounds", 5))
        else:
            caption = t("goal.caption")
        rows = self.goal.show_rows(caption, len(criteria))
        for row, criterion in zip(rows, criteria, strict=True):
            mark, meta = verdict_meta(criterion)
            row.set_line(str(criterion.get("text")), meta, mark=mark)
