"""One task: its stage (dot plus words), 最新进展, the user's words, its folder and its runs, with 停止
while it is working or needs you. Stopping never waits: the button says 正在停止… and the view re-reads
when the task changes. It reads through the TaskFacade; a read for a task no longer shown is dropped.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.errors import NotFoundError
from core.tasks.facade import TaskFacade
from core.tasks.views import RunView, TaskDetail, TaskView
from ui import formatting, theme
from ui.async_calls import AsyncCalls
from ui.i18n import language, t
from ui.reloader import Reloader
from ui.status_dot import StatusDot
from ui.task_chip import dot_state
from ui.task_list import OneLineLabel, TaskPane, reason, section_label
from ui.theme import DotState
from ui.wrapped_label import SELECTABLE, WrappedLabel

log = logging.getLogger(__name__)

# The user's words are shown whole unless they run to pages; the rest is in the conversation.
WORDS_LIMIT = 1200
STOPPABLE = ("working", "needs")


def run_dot(run: RunView) -> DotState:
    if run.state != "ended":
        return "working"
    if run.outcome == "failed":
        return "failed"
    if run.outcome in ("needs_you", "budget"):
        return "needs"
    return "idle"


def run_line(position: int, run: RunView) -> str:
    """「第 2 次 · 回答后继续 · 9 步 · 完成」"""
    parts = [
        t("task.run", n=position),
        t(f"task.cause.{run.cause}"),
        formatting.step_count(run.steps),
        t(f"task.outcome.{run.outcome}")
        if run.state == "ended" and run.outcome
        else t(f"task.state.{run.state}"),
    ]
    return " · ".join(parts)


def run_took(run: RunView) -> str:
    if run.started_at <= 0 or run.ended_at <= run.started_at:
        return ""
    return formatting.duration(int((run.ended_at - run.started_at) * 1000))


def spent_text(task: TaskView) -> str:
    if task.spent_usd <= 0:
        return ""
    return t("task.spent", spent=f"{task.spent_usd:.2f}", budget=f"{task.budget_usd:.2f}")


class RunRow(QWidget):
    def __init__(self, position: int, run: RunView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runRow")
        self.run = run
        self.dot = StatusDot(run_dot(run), 7, self)
        self.line = QLabel(run_line(position, run), self)
        self.line.setObjectName("runLine")
        self.took = QLabel(run_took(run), self)
        self.took.setObjectName("runTook")
        self.took.setProperty("role", "faint")
        self.took.setFont(theme.font("small"))
        self.error = WrappedLabel(run.error, self)
        self.error.setObjectName("runError")
        self.error.setProperty("role", "muted")
        self.error.setFont(theme.font("small"))
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setVisible(bool(run.error))
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(8)
        head.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(self.line, 1)
        head.addWidget(self.took)
        under = QHBoxLayout()
        under.setContentsMargins(self.dot.sizeHint().width() + 8, 0, 0, 0)
        under.addWidget(self.error)
        column = QVBoxLayout(self)
        column.setContentsMargins(14, 9, 14, 9)
        column.setSpacing(2)
        column.addLayout(head)
        column.addLayout(under)


class TaskDetailView(TaskPane):
    """The task pane. `back_to` says where the back control goes ("list" or "chat")."""

    def __init__(self, tasks: TaskFacade, parent: QWidget | None = None) -> None:
        super().__init__("taskDetail", parent)
        self._tasks = tasks
        self._task_id: str | None = None
        self._detail: TaskDetail | None = None
        self._stopping: str | None = None
        self._following = False
        self._calls = AsyncCalls()
        self._reader: Reloader[tuple[str, TaskDetail | None]] = Reloader(
            self._load, self._apply, self._failed
        )
        self.back_to = "chat"

        self.stop_button = QPushButton(t("task.stop"), self.header)
        self.stop_button.setObjectName("taskStopButton")
        self.stop_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.stop_button.setFont(theme.font("small"))
        self.stop_button.clicked.connect(self._on_stop)
        self.stop_button.hide()
        self.add_header_action(self.stop_button)
        self._build_stage()
        self._build_facts()
        self._build_runs()
        self._set_body_visible(False)

    def _build_stage(self) -> None:
        col = self.column_layout
        stage_row = QHBoxLayout()
        stage_row.setContentsMargins(4, 0, 0, 0)
        stage_row.setSpacing(6)
        self.stage_dot = StatusDot("idle", 8, self.column)
        self.stage_label = QLabel(self.column)
        self.stage_label.setObjectName("taskStage")
        self.spent_label = QLabel(self.column)
        self.spent_label.setObjectName("taskSpent")
        self.spent_label.setProperty("role", "faint")
        self.spent_label.setFont(theme.font("small"))
        stage_row.addWidget(self.stage_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        stage_row.addWidget(self.stage_label)
        stage_row.addWidget(self.spent_label, 0, Qt.AlignmentFlag.AlignBaseline)
        stage_row.addStretch(1)
        col.addLayout(stage_row)

        self.notice = WrappedLabel("", self.column)  # a failed stop or read says why, quietly
        self.notice.setObjectName("taskNotice")
        self.notice.setProperty("role", "danger")
        self.notice.setFont(theme.font("small"))
        self.notice.setContentsMargins(4, 0, 0, 0)
        self.notice.hide()
        col.addWidget(self.notice)
        col.addSpacing(6)

    def _build_facts(self) -> None:
        self.well = QFrame(self.column)
        self.well.setObjectName("taskWell")
        facts = QVBoxLayout(self.well)
        facts.setContentsMargins(14, 12, 14, 14)
        facts.setSpacing(4)
        self.latest_label = self._fact(facts, t("task.latest"), "taskLatest")
        facts.addSpacing(8)
        self.words_label = self._fact(facts, t("task.words"), "taskWords")
        # Its own box, so a task without a folder leaves no gap behind.
        self.folder_box = QWidget(self.well)
        folder_column = QVBoxLayout(self.folder_box)
        folder_column.setContentsMargins(0, 8, 0, 0)
        folder_column.setSpacing(4)
        folder_column.addWidget(section_label(t("task.folder"), self.folder_box))
        folder_row = QHBoxLayout()
        folder_row.setContentsMargins(0, 0, 0, 0)
        folder_row.setSpacing(8)
        # A path is cut in the middle when narrow: both of its ends say the most.
        self.folder_label = OneLineLabel(Qt.TextElideMode.ElideMiddle, self.folder_box)
        self.folder_label.setTextInteractionFlags(SELECTABLE)
        self.folder_label.setObjectName("taskFolder")
        self.open_folder = QPushButton(t("task.open_folder"), self.folder_box)
        self.open_folder.setObjectName("openFolderButton")
        self.open_folder.setFlat(True)
        self.open_folder.setCursor(Qt.CursorShape.PointingHandCursor)
        self.open_folder.clicked.connect(self._on_open_folder)
        folder_row.addWidget(self.folder_label, 1)
        folder_row.addWidget(self.open_folder)
        folder_column.addLayout(folder_row)
        facts.addWidget(self.folder_box)
        self.column_layout.addWidget(self.well)

    def _build_runs(self) -> None:
        col = self.column_layout
        col.addSpacing(12)
        self.runs_caption = section_label(t("task.runs"), self.column)
        self.runs_caption.setContentsMargins(4, 0, 0, 0)
        col.addWidget(self.runs_caption)
        self.runs_well = QFrame(self.column)
        self.runs_well.setObjectName("taskWell")
        self._runs_layout = QVBoxLayout(self.runs_well)
        self._runs_layout.setContentsMargins(0, 0, 0, 0)
        self._runs_layout.setSpacing(0)
        col.addWidget(self.runs_well)
        self.runs: list[RunRow] = []
        col.addStretch(1)

    def _fact(self, layout: QVBoxLayout, caption: str, name: str) -> WrappedLabel:
        layout.addWidget(section_label(caption, self.well))
        value = WrappedLabel("", self.well)
        value.setObjectName(name)
        value.setTextFormat(Qt.TextFormat.PlainText)
        value.setTextInteractionFlags(SELECTABLE)
        layout.addWidget(value)
        return value

    # -- what the window drives ------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        return self._task_id

    @property
    def detail(self) -> TaskDetail | None:
        return self._detail

    def show_task(self, task_id: str, back_to: str = "chat") -> None:
        self.back_to = back_to
        self.set_back_text(t("tasks.back_to_list") if back_to == "list" else t("tasks.back_to_chat"))
        self._following = True
        if task_id != self._task_id:
            self._reader.reset()
            self._task_id = task_id
            self._detail = None
            self.set_title("")
            self.notice.hide()
            self._set_body_visible(False)
            self._show_stop(None)
        self._reader.request()

    def close_pane(self) -> None:
        """Hidden: stop following the task. Showing it again re-reads it, keeping what it showed meanwhile."""
        self._reader.reset()
        self._following = False

    async def reload(self) -> None:
        if self._task_id is not None:
            await self._reader.request()

    def on_task_changed(self, task_id: str) -> None:
        if self._following and task_id == self._task_id:
            self._reader.request()

    def shutdown(self) -> None:
        self.close_pane()
        self._task_id = None
        self._calls.cancel_all()

    # -- reading ---------------------------------------------------------------------------------------

    async def _load(self) -> tuple[str, TaskDetail | None]:
        task_id = self._task_id
        if task_id is None:
            return "", None
        try:
            return task_id, await self._tasks.detail(task_id, lang=language())
        except NotFoundError:
            return task_id, None

    def _apply(self, result: tuple[str, TaskDetail | None]) -> None:
        task_id, detail = result
        if task_id != self._task_id:
            return  # read for a task that is no longer shown
        if detail is None:
            self._detail = None
            self._set_body_visible(False)
            self._show_stop(None)
            self._say(t("task.gone"))
            return
        self._detail = detail
        if self._stopping != task_id:
            self.notice.hide()
        self._show(detail)

    def _failed(self, exc: Exception) -> None:
        self._say(t("task.load_failed", reason=reason(exc)))

    def _say(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.show()

    def _show(self, detail: TaskDetail) -> None:
        task = detail.task
        self.set_title(task.title)
        self.stage_dot.set_state(dot_state(task.group, task.stage))
        self.stage_label.setText(task.stage_label)
        spent = spent_text(task)
        self.spent_label.setText(f"·  {spent}" if spent else "")
        self.spent_label.setVisible(bool(spent))
        latest = task.latest_line.strip()
        self.latest_label.setText(latest or t("task.no_latest"))
        self.latest_label.setProperty("role", "" if latest else "faint")
        self.latest_label.style().unpolish(self.latest_label)
        self.latest_label.style().polish(self.latest_label)
        words = detail.words.strip()
        self.words_label.setText(words if len(words) <= WORDS_LIMIT else words[:WORDS_LIMIT] + "…")
        self.folder_label.set_full_text(detail.folder)
        self.folder_box.setVisible(bool(detail.folder))
        self.open_folder.setVisible(bool(detail.folder) and Path(detail.folder).is_dir())
        self._show_runs(detail.runs)
        self._show_stop(task)
        self._set_body_visible(True)

    def _show_runs(self, runs: tuple[RunView, ...]) -> None:
        while self._runs_layout.count():
            item = self._runs_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self.runs = []
        for position, run in enumerate(runs, start=1):
            if position > 1:
                line = QFrame(self.runs_well)
                line.setObjectName("taskRowLine")
                line.setFixedHeight(1)
                self._runs_layout.addWidget(line)
            row = RunRow(position, run, self.runs_well)
            self._runs_layout.addWidget(row)
            self.runs.append(row)

    def _show_stop(self, task: TaskView | None) -> None:
        stoppable = task is not None and task.group in STOPPABLE
        self.stop_button.setVisible(stoppable)
        busy = task is not None and self._stopping == task.id
        self.stop_button.setEnabled(not busy)
        self.stop_button.setText(t("task.stopping") if busy else t("task.stop"))

    def _set_body_visible(self, visible: bool) -> None:
        for widget in (self.stage_dot, self.stage_label, self.well):
            widget.setVisible(visible)
        self.spent_label.setVisible(visible and bool(self.spent_label.text()))
        has_runs = visible and bool(self.runs)
        self.runs_caption.setVisible(has_runs)
        self.runs_well.setVisible(has_runs)

    # -- commands --------------------------------------------------------------------------------------

    def _on_stop(self) -> None:
        task_id = self._task_id
        if task_id is None or self._stopping == task_id:
            return
        self._stopping = task_id
        self.notice.hide()
        self.stop_button.setEnabled(False)
        self.stop_button.setText(t("task.stopping"))
        self._calls.start(
            self._tasks.stop_task(task_id),
            done=lambda _view: self._stop_ended(task_id, None),
            failed=lambda exc: self._stop_ended(task_id, exc),
        )

    def _stop_ended(self, task_id: str, exc: Exception | None) -> None:
        if self._stopping == task_id:
            self._stopping = None
        if task_id != self._task_id:
            return
        if exc is not None:
            self._say(t("task.stop_failed", reason=reason(exc)))
        self._show_stop(self._detail.task if self._detail else None)
        self._reader.request()  # the stopped stage, even if its TaskChanged was missed

    def _on_open_folder(self) -> None:
        folder = self.folder_label.full_text()
        if folder:
            QDesktopServices.openUrl(QUrl.fromLocalFile(folder))
