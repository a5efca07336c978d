"""One task (docs/desktop.md#task-detail): its stage as a dot plus words, how long, 约 $0.08 / $1.00;
then one well with 来自 (the channel, the time and the user's words, which open that conversation),
最新进展 (the files it names linked, `ui.task_result`), 预算 (with 改, `ui.budget_editor`) and 文件夹
(its sizes and 打开, and the cleanup date with 保留 when one is set); then each run as a folded 处理过程 line
with its cost; then what it did outside its folder (`ui.task_audit`); then 停止 (while it works or waits for
you), 导出 (`ui.export_action`) and 删除 (after an inline confirm).

`TaskDetailBody` is the detail itself. The main pane shows it in `TaskDetailView` (a pane with ‹ back and the
title in its header); the bot info panel shows the same class in place, with the title on its first line.
Commands never wait: the button says 正在停止… / 正在删除… and the view re-reads when the task changes. It
reads through the TaskFacade; a read for a task no longer shown is dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.errors import NotFoundError
from core.tasks.facade import TaskFacade
from core.tasks.views import RunView, TaskDetail, TaskView
from ui import theme
from ui.async_calls import AsyncCalls
from ui.budget_editor import BudgetSection
from ui.delete_confirm import DeleteFlow, small_button
from ui.detail_actions import action_row, place_actions
from ui.export_action import AskPath, ExportAction
from ui.i18n import language, t
from ui.reloader import Reloader
from ui.status_dot import StatusDot
from ui.task_audit import TaskAuditList
from ui.task_chip import dot_state
from ui.task_detail_sections import (
    FolderSection,
    OriginRow,
    RunSection,
    money,
    run_dot,
    run_line,
    task_age,
)
from ui.task_list import TaskPane, reason, section_label
from ui.task_plan import TaskPlanSection
from ui.task_result import TaskResult
from ui.wrapped_label import WrappedLabel

log = logging.getLogger(__name__)

__all__ = ["STOPPABLE", "TaskDetailBody", "TaskDetailView", "run_dot", "run_line"]

# The user's words are shown whole unless they run to pages; the rest is in the conversation.
WORDS_LIMIT = 1200
# A person can stop a task that works or waits for them (docs/task-stages.md: needs_you -> stopped); an ended
# one is done.
STOPPABLE = ("working", "needs")


class TaskDetailBody(QWidget):
    """The detail's content. `conversationOpened(id)`: 来自 was clicked; `deleted(id)`: the task is gone
    after 删除. With `titled`, the body shows the task's title itself (the panel has no pane header).
    `ask_path` asks where 导出 saves (the save dialog unless given; tests pass their own)."""

    conversationOpened = Signal(str)
    deleted = Signal(str)
    titleChanged = Signal(str)

    def __init__(
        self,
        tasks: TaskFacade,
        parent: QWidget | None = None,
        titled: bool = False,
        now: Callable[[], float] = time.time,
        ask_path: AskPath | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("taskDetailBody")
        self._tasks = tasks
        self._ask_path = ask_path
        self._now = now
        self._task_id: str | None = None
        self._detail: TaskDetail | None = None
        self._stopping: str | None = None
        self._following = False
        self._calls = AsyncCalls()
        self._reader: Reloader[tuple[str, TaskDetail | None]] = Reloader(
            self._load, self._apply, self._failed
        )
        self.runs: list[RunSection] = []

        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(0, 0, 0, 0)
        self._column.setSpacing(8)
        self.title_label = WrappedLabel("", self)
        self.title_label.setObjectName("taskDetailTitle")
        self.title_label.setFont(theme.font("strong"))
        self.title_label.setTextFormat(Qt.TextFormat.PlainText)
        self.title_label.setVisible(titled)
        self._titled = titled
        self._column.addWidget(self.title_label)
        self._build_stage()
        self._build_facts()
        self.plan = TaskPlanSection(self)
        self._column.addWidget(self.plan)
        self._build_runs()
        self.audit = TaskAuditList(self._tasks, self, self._now)
        self._column.addWidget(self.audit)
        self._build_actions()
        self._set_body_visible(False)

    # -- building --------------------------------------------------------------------------------------

    def _build_stage(self) -> None:
        stage_row = QHBoxLayout()
        stage_row.setContentsMargins(4, 0, 0, 0)
        stage_row.setSpacing(6)
        self.stage_dot = StatusDot("idle", 8, self)
        self.stage_label = QLabel(self)
        self.stage_label.setObjectName("taskStage")
        self.spent_label = QLabel(self)
        self.spent_label.setObjectName("taskSpent")
        self.spent_label.setProperty("role", "faint")
        self.spent_label.setFont(theme.font("small"))
        self.spent_label.setWordWrap(True)
        stage_row.addWidget(self.stage_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        stage_row.addWidget(self.stage_label)
        stage_row.addWidget(self.spent_label, 1, Qt.AlignmentFlag.AlignVCenter)
        self._column.addLayout(stage_row)

        self.notice = WrappedLabel("", self)  # a failed command or read says why, quietly
        self.notice.setObjectName("taskNotice")
        self.notice.setProperty("role", "danger")
        self.notice.setFont(theme.font("small"))
        self.notice.setContentsMargins(4, 0, 0, 0)
        self.notice.hide()
        self._column.addWidget(self.notice)

    def _build_facts(self) -> None:
        # One well, no lines between its rows (docs/desktop.md#task-detail): 来自, 最新进展, 预算, 文件夹.
        self.well = QFrame(self)
        self.well.setObjectName("taskWell")
        facts = QVBoxLayout(self.well)
        facts.setContentsMargins(14, 12, 14, 14)
        facts.setSpacing(4)
        facts.addWidget(section_label(t("task.origin"), self.well))
        self.origin = OriginRow(self.well)
        self.origin.opened.connect(self._open_conversation)
        self.words_label = self.origin.words
        facts.addWidget(self.origin)
        facts.addSpacing(8)
        facts.addWidget(section_label(t("task.latest"), self.well))
        self.result = TaskResult(self.well)
        self.latest_label = self.result.label
        facts.addWidget(self.result)
        facts.addSpacing(8)
        self.budget = BudgetSection(self._tasks, self.well)
        self.budget.saved.connect(self._budget_saved)
        self.budget_label = self.budget.value
        facts.addWidget(self.budget)
        # Its own box, so a task without a folder leaves no gap behind.
        self.folder = FolderSection(self._tasks, self.well, self._now)
        self.folder.kept.connect(self._kept)
        self.folder_box = self.folder
        self.folder_label = self.folder.folder_label
        self.folder_size = self.folder.folder_size
        self.open_folder = self.folder.open_folder
        facts.addWidget(self.folder)
        self._column.addWidget(self.well)

    def _build_runs(self) -> None:
        self._column.addSpacing(6)
        self.runs_caption = section_label(t("task.runs"), self)
        self.runs_caption.setContentsMargins(4, 0, 0, 0)
        self._column.addWidget(self.runs_caption)
        self.runs_well = QFrame(self)
        self.runs_well.setObjectName("taskWell")
        self._runs_layout = QVBoxLayout(self.runs_well)
        self._runs_layout.setContentsMargins(0, 0, 0, 0)
        self._runs_layout.setSpacing(0)
        self._column.addWidget(self.runs_well)

    def _build_actions(self) -> None:
        self.action_row, row = action_row(self)
        self.stop_button = self._button(t("task.stop"), "taskStopButton", self._on_stop)
        self.export = ExportAction(
            lambda task_id, lang: self._tasks.export_markdown(task_id, lang=lang), self, self._ask_path
        )
        self.export_button = self.export.button
        self.export_button.setParent(self.action_row)
        # Deleting also removes the folder, so it asks first, in place (no modal dialog).
        self.deletion = DeleteFlow(
            t("task.delete_confirm"),
            (t("task.delete"), t("task.deleting"), t("task.cancel")),
            self,
            self.action_row,
            self._calls,
            current=lambda: self._task_id,
            shown=lambda: self._detail is not None,
            delete=self._tasks.delete_task,
            starting=self.notice.hide,
            failed=lambda exc: self._say(t("task.delete_failed", reason=reason(exc))),
            reread=self._reader.request,
        )
        self.delete_button = self._button(t("task.delete"), "taskDeleteButton", self.deletion.ask)
        buttons = (self.stop_button, self.export_button, self.delete_button)
        place_actions(self._column, self.action_row, row, buttons, self.export, self.deletion)

        self.confirm = self.deletion.confirm
        # The names tests and callers use.
        self.confirm_text = self.confirm.text
        self.confirm_delete = self.confirm.delete_button
        self.cancel_delete = self.confirm.cancel_button

    def _button(self, text: str, name: str, slot: Callable[[], None]) -> QPushButton:
        return small_button(text, name, slot, self)

    # -- what the owner drives -------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        return self._task_id

    @property
    def detail(self) -> TaskDetail | None:
        return self._detail

    def show_task(self, task_id: str) -> None:
        self._following = True
        if task_id != self._task_id:
            self._reader.reset()
            for section in self.runs:
                section.shutdown()
            self._task_id = task_id
            self._detail = None
            self.title_label.setText("")
            self.titleChanged.emit("")
            self.notice.hide()
            self.confirm.hide()
            self.export.set_target(None)
            self._set_body_visible(False)
            self._show_actions(None)
        self.audit.show_task(task_id)
        self._reader.request()

    def close_view(self) -> None:
        """Hidden: stop following the task. Showing it again re-reads it, keeping what it showed meanwhile."""
        self._reader.reset()
        self.audit.close_view()
        self._following = False

    async def reload(self) -> None:
        if self._task_id is not None:
            await self._reader.request()
            await self.audit.reload()

    def on_task_changed(self, task_id: str) -> None:
        if self._following and task_id == self._task_id:
            self._reader.request()
            self.audit.on_task_changed(task_id)  # at most every few seconds: the trail is a file to scan

    def shutdown(self) -> None:
        self.close_view()
        for section in self.runs:
            section.shutdown()
        self._task_id = None
        self._calls.cancel_all()
        self.audit.shutdown()
        self.budget.shutdown()
        self.folder.shutdown()
        self.export.shutdown()

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
            self._show_actions(None)
            self._say(t("task.gone"))
            if self.deletion.gone(task_id):
                self.deleted.emit(task_id)
            return
        self._detail = detail
        if task_id not in (self._stopping, self.deletion.deleting):
            self.notice.hide()
        self._show(detail)

    def _failed(self, exc: Exception) -> None:
        self._say(t("task.load_failed", reason=reason(exc)))

    def _say(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.show()

    def _show(self, detail: TaskDetail) -> None:
        task = detail.task
        if self.title_label.text() != task.title:
            self.title_label.setText(task.title)
            self.titleChanged.emit(task.title)
        self.stage_dot.set_state(dot_state(task.group, task.stage))
        self.stage_label.setText(task.stage_label)
        facts = [part for part in (task_age(task, self._now()), money(task)) if part]
        self.spent_label.setText("·  " + "  ·  ".join(facts) if facts else "")
        words = detail.words.strip()
        self.origin.set_origin(task, words if len(words) <= WORDS_LIMIT else words[:WORDS_LIMIT] + "…")
        self.result.set_detail(detail)
        self.budget.set_task(task)
        self.folder.set_detail(detail)
        self.export.set_target(task.id, task.title)
        self.plan.set_detail(detail)
        self._show_runs(detail.task, detail.runs)
        self._show_actions(task)
        self._set_body_visible(True)

    def _show_runs(self, task: TaskView, runs: tuple[RunView, ...]) -> None:
        """Keep each run's section (and whether it is open) while the run is the same one; rebuild only
        when runs were added or replaced. Every read sets each line anew: a run that asked and was answered
        no longer says 等你."""
        task_id = task.id

        def marks(position: int) -> tuple[bool, bool]:
            newest = position == len(runs)
            return newest and task.group == "needs", not newest

        if [s.run.id for s in self.runs] == [r.id for r in runs] and all(
            s.task_id == task_id for s in self.runs
        ):
            for position, (section, run) in enumerate(zip(self.runs, runs, strict=True), start=1):
                section.set_run(position, run, *marks(position))
            return
        kept = {s.run.id: s for s in self.runs if s.task_id == task_id}
        while self._runs_layout.count():
            item = self._runs_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None and not (isinstance(widget, RunSection) and widget.run.id in kept):
                if isinstance(widget, RunSection):
                    widget.shutdown()
                widget.hide()
                widget.deleteLater()
        sections: list[RunSection] = []
        for position, run in enumerate(runs, start=1):
            if position > 1:
                line = QFrame(self.runs_well)
                line.setObjectName("taskRowLine")
                line.setFixedHeight(1)
                self._runs_layout.addWidget(line)
            reused = kept.pop(run.id) if run.id in kept else None
            if reused is None:
                reused = RunSection(task_id, position, run, self._steps_of, self.runs_well, self._now)
            reused.set_run(position, run, *marks(position))
            self._runs_layout.addWidget(reused)
            reused.show()
            sections.append(reused)
        for stale in kept.values():
            stale.shutdown()
            stale.deleteLater()
        self.runs = sections

    async def _steps_of(self, run_id: str) -> list[dict[str, object]]:
        task_id = self._task_id
        if task_id is None:
            return []
        return await self._tasks.run_activity(task_id, run_id)

    def _show_actions(self, task: TaskView | None) -> None:
        stoppable = task is not None and task.group in STOPPABLE
        self.stop_button.setVisible(stoppable)
        busy = task is not None and self._stopping == task.id
        self.stop_button.setEnabled(not busy)
        self.stop_button.setText(t("task.stopping") if busy else t("task.stop"))
        deleting = task is not None and self.deletion.deleting == task.id
        self.delete_button.setVisible(task is not None)
        self.delete_button.setEnabled(not deleting)
        self.action_row.setVisible(task is not None)

    def _set_body_visible(self, visible: bool) -> None:
        for widget in (self.stage_dot, self.stage_label, self.well, self.action_row):
            widget.setVisible(visible)
        self.title_label.setVisible(self._titled and visible)
        self.spent_label.setVisible(visible and bool(self.spent_label.text()))
        if not visible:
            self.export.status.hide()
        has_runs = visible and bool(self.runs)
        self.runs_caption.setVisible(has_runs)
        self.runs_well.setVisible(has_runs)
        self.audit.set_shown(visible)
        if not visible:
            self.plan.hide()

    # -- commands --------------------------------------------------------------------------------------

    def _open_conversation(self, conversation_id: str) -> None:
        if conversation_id:
            self.conversationOpened.emit(conversation_id)

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
        self._show_actions(self._detail.task if self._detail else None)
        self._reader.request()  # the stopped stage, even if its TaskChanged was missed

    def _budget_saved(self, view: TaskView) -> None:
        if self._detail is not None and view.id == self._task_id:
            facts = [part for part in (task_age(view, self._now()), money(view)) if part]
            self.spent_label.setText("·  " + "  ·  ".join(facts) if facts else "")
        self._reader.request()  # the whole task as it is now (a task stopped at its budget goes on)

    def _kept(self, detail: TaskDetail) -> None:
        if detail.task.id == self._task_id:
            self._reader.request()  # read in the UI's language; the folder section already dropped the date


class TaskDetailView(TaskPane):
    """The task in the main pane. `back_to` says where the back control goes ("list", "needs" or "chat")."""

    conversationOpened = Signal(str)

    def __init__(
        self, tasks: TaskFacade, parent: QWidget | None = None, ask_path: AskPath | None = None
    ) -> None:
        super().__init__("taskDetail", parent)
        self.body = TaskDetailBody(tasks, self.column, ask_path=ask_path)
        self.body.titleChanged.connect(self.set_title)
        self.body.conversationOpened.connect(self.conversationOpened)
        self.body.deleted.connect(lambda _task_id: self.backRequested.emit())
        self.column_layout.addWidget(self.body)
        self.column_layout.addStretch(1)
        self.back_to = "chat"
        # The parts by the names the window and its tests have always used.
        self.stage_dot = self.body.stage_dot
        self.stage_label = self.body.stage_label
        self.spent_label = self.body.spent_label
        self.notice = self.body.notice
        self.well = self.body.well
        self.latest_label = self.body.latest_label
        self.words_label = self.body.words_label
        self.folder_label = self.body.folder_label
        self.budget = self.body.budget
        self.folder = self.body.folder
        self.export = self.body.export
        self.stop_button = self.body.stop_button
        self.delete_button = self.body.delete_button

    @property
    def task_id(self) -> str | None:
        return self.body.task_id

    @property
    def detail(self) -> TaskDetail | None:
        return self.body.detail

    @property
    def runs(self) -> list[RunSection]:
        return self.body.runs

    def show_task(self, task_id: str, back_to: str = "chat") -> None:
        self.back_to = back_to
        self.set_back_text(t("tasks.back_to_list") if back_to == "list" else t("tasks.back_to_chat"))
        if task_id != self.body.task_id:
            self.set_title("")
        self.body.show_task(task_id)

    def close_pane(self) -> None:
        self.body.close_view()

    async def reload(self) -> None:
        await self.body.reload()

    def on_task_changed(self, task_id: str) -> None:
        self.body.on_task_changed(task_id)

    def shutdown(self) -> None:
        self.body.shutdown()
