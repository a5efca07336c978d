"""The parts of a task's detail that stand on their own: how its facts read (how long, budget, folder size,
where it came from), the 文件夹 section (its path, size and 打开, the size of the session record, and when
a cleanup date is set 「文件夹将于 12月2日 清理」 with 保留), and one run's folded 处理过程 line
that opens into its steps.

A run's steps are read only when its line is first opened (most are never opened), and again while it is
open and the run still works, so a live run grows in place. The store keeps a run's newest 120 steps and a
note counting the dropped ones; that note is shown as 「前面还有 N 步」 above the list, not as a step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path

import shiboken6
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from core.activity_steps import ActivityStep, dropped_count
from core.tasks.facade import TaskFacade
from core.tasks.views import RunView, TaskDetail, TaskView
from ui import formatting, theme
from ui.activity_view import FOLDED, UNFOLDED, StepList
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.cost_words import model_priced, run_cost, task_money
from ui.formatting import human_size
from ui.i18n import t
from ui.open_failure import OpenFailure
from ui.reloader import Reloader
from ui.status_dot import StatusDot
from ui.task_chip import PressableRow
from ui.task_list import OneLineLabel, section_label
from ui.theme import DotState
from ui.wrapped_label import SELECTABLE, WrappedLabel

log = logging.getLogger(__name__)

MINUTE = 60
HOUR = 3600
DAY = 24 * HOUR

StepsLoader = Callable[[str], Awaitable[list[dict[str, object]]]]


def span(seconds: float) -> str:
    """How long, as a person says it: 「不到 1 分钟」「12 分钟」「2 小时 5 分钟」「3 天」."""
    seconds = max(0.0, seconds)
    if seconds < MINUTE:
        return t("span.under_minute")
    if seconds < HOUR:
        return t("span.minutes", n=int(seconds // MINUTE))
    if seconds < DAY:
        hours, rest = divmod(int(seconds), HOUR)
        minutes = rest // MINUTE
        return t("span.hours_minutes", h=hours, m=minutes) if minutes else t("span.hours", h=hours)
    return t("span.days", n=int(seconds // DAY))


def task_age(task: TaskView, now: float) -> str:
    """How long it has been working (to now), or how long it took (to its last change) once ended."""
    end = task.updated_at if task.group == "ended" else now
    return span(end - task.created_at) if task.created_at > 0 else ""


def money(task: TaskView) -> str:
    """「约 $0.08 / $1.00」: the budget is always worth saying, the spend even when nothing is spent."""
    return task_money(task, model_priced(task))


def session_line(detail: TaskDetail) -> str:
    """「会话记录 340 KB」: what the task's session keeps on disk besides its folder; '' when unknown."""
    return t("cost.size.session", size=human_size(detail.session_bytes)) if detail.session_bytes > 0 else ""


def day_words(ts: float, now: float) -> str:
    """A day as a person says it: 12月2日 (this year), 2027年1月3日 (another)."""
    moment = datetime.fromtimestamp(ts)
    month_name = t("cost.months").split("|")[moment.month - 1]
    fields = {"year": moment.year, "month": moment.month, "month_name": month_name, "day": moment.day}
    if moment.year == datetime.fromtimestamp(now).year:
        return t("cost.day", **fields)
    return t("cost.day_year", **fields)


def cleanup_line(detail: TaskDetail, now: float) -> str:
    """「文件夹将于 12月2日 清理」; '' when no date is set."""
    if detail.cleanup_at <= 0:
        return ""
    return t("cost.cleanup", date=day_words(detail.cleanup_at, now))


def origin_line(task: TaskView) -> str:
    """「桌面 · 10:02」: the channel it came from (only the desktop for now) and when."""
    return f"{t('task.channel.desktop')} · {formatting.when(task.created_at)}"


# Outcomes that wait on the person: only the newest run of a task that still waits shows them as waiting.
WAITING_OUTCOMES = ("needs_you", "budget")
# How often a run waiting on the model redraws its elapsed time.
TICK_MS = 1000


def run_dot(run: RunView, waiting: bool = True) -> DotState:
    """The run's dot. `waiting` says whether the task still waits on what this run asked; once answered
    (a later run took over, or the task went on or ended) the run's amber dot goes."""
    if run.state != "ended":
        return "working"
    if run.outcome == "failed":
        return "failed"
    if run.outcome in WAITING_OUTCOMES and waiting:
        return "needs"
    return "idle"


def run_span(run: RunView, now: float) -> str:
    if run.started_at <= 0:
        return ""
    end = run.ended_at if run.state == "ended" else now
    return span(end - run.started_at) if end >= run.started_at else ""


def model_wait_since(run: RunView) -> float | None:
    """When the run began waiting on the model, or None when it is not waiting on it. The core says when
    its current request went out (after any number of steps); a running run with no step yet that the core
    has not said so of has sent its first request anyway (docs/desktop.md#task-detail)."""
    if run.state == "ended":
        return None
    if run.model_wait_since is not None:
        return run.model_wait_since
    if run.state == "running" and run.steps == 0 and run.started_at > 0:
        return run.started_at
    return None


def elapsed_words(seconds: float) -> str:
    """「12 秒」「1 分 5 秒」: a wait short enough that its seconds matter."""
    whole = max(0, int(seconds))
    if whole < MINUTE:
        return t("task_detail.seconds", n=whole)
    if whole < HOUR:
        return t("task_detail.minutes_seconds", m=whole // MINUTE, s=whole % MINUTE)
    return span(whole)


def outcome_word(run: RunView, waiting: bool, answered: bool) -> str:
    """How it ended when that is news: 「等你」 only while the task still waits on it, 「已回答」 once a later
    run took the answer; plain done says nothing."""
    if not run.outcome or run.outcome == "done":
        return ""
    if run.outcome == "needs_you" and not waiting:
        return t("task_detail.answered") if answered else ""
    return t(f"task.outcome.{run.outcome}")


def run_line(
    position: int, run: RunView, now: float | None = None, waiting: bool = True, answered: bool = False
) -> str:
    """「第 2 次 · 回答后继续 · 9 步 · 3 分钟」; how it ended only when that is news (not plain done); a run
    waiting on the model says so with its elapsed time: 「第 1 次 · 开始 · 0 步 · 等模型回复 · 12 秒」."""
    moment = time.time() if now is None else now
    parts = [t("task.run", n=position), t(f"task.cause.{run.cause}"), formatting.step_count(run.steps)]
    since = model_wait_since(run)
    if since is not None:
        parts.append(t("task_detail.model_wait", elapsed=elapsed_words(moment - since)))
    else:
        took = run_span(run, moment)
        if took:
            parts.append(took)
        if run.state != "ended":
            parts.append(t(f"task.state.{run.state}"))
        else:
            word = outcome_word(run, waiting, answered)
            if word:
                parts.append(word)
    cost = run_cost(run)
    if cost:
        parts.append(cost)
    return " · ".join(parts)


def parse_steps(rows: Sequence[dict[str, object]]) -> tuple[list[ActivityStep], int]:
    """Stored rows as steps, and how many older steps were dropped (from the runner's first note)."""
    dropped = 0
    steps: list[ActivityStep] = []
    for position, row in enumerate(rows):
        step = ActivityStep.from_json(dict(row))
        count = dropped_count(step) if position == 0 else None
        if count is not None:
            dropped = count
            continue
        steps.append(step)
    return steps, dropped


class OriginRow(PressableRow):
    """来自: 「桌面 · 10:02」 over the user's words; a click opens the conversation they were said in."""

    opened = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("taskOrigin")
        self.conversation_id = ""
        self.meta = QLabel(self)
        self.meta.setObjectName("taskOriginMeta")
        self.meta.setProperty("role", "muted")
        self.meta.setFont(theme.font("small"))
        self.words = WrappedLabel("", self)
        self.words.setObjectName("taskWords")
        self.words.setTextFormat(Qt.TextFormat.PlainText)
        for child in (self.meta, self.words):
            child.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 2, 0, 2)
        column.setSpacing(2)
        column.addWidget(self.meta)
        column.addWidget(self.words)
        self.setToolTip(t("task.open_conversation"))
        self.clicked.connect(lambda: self.opened.emit(self.conversation_id))

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        layout = self.layout()
        return layout.totalHeightForWidth(width) if layout is not None else super().heightForWidth(width)

    def set_origin(self, task: TaskView, words: str) -> None:
        self.conversation_id = task.conversation_id
        self.meta.setText(origin_line(task))
        self.words.setText(f"「{words}」" if words else "")
        self.words.setVisible(bool(words))
        self.setText(words)  # not drawn: what tests and screen readers read
        self.setEnabled(bool(task.conversation_id))
        self.updateGeometry()


class FolderSection(QWidget):
    """文件夹: the path (cut in the middle when narrow) with its size and 打开 (which says so, with the path
    to copy, when nothing on the computer opens folders), the session record's size under it, and the
    cleanup date
    with 保留 when one is set. 保留 goes through the TaskFacade without waiting; once it went through the
    line goes and `kept(TaskDetail)` tells the detail."""

    kept = Signal(object)

    def __init__(
        self, tasks: TaskFacade, parent: QWidget | None = None, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__(parent)
        self.setObjectName("taskFolderSection")
        self._tasks = tasks
        self._now = now
        self._task_id: str | None = None
        self._keeping: str | None = None
        self._calls = AsyncCalls()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 8, 0, 0)
        column.setSpacing(4)
        column.addWidget(section_label(t("task.folder"), self))
        path_row = QHBoxLayout()
        path_row.setContentsMargins(0, 0, 0, 0)
        path_row.setSpacing(8)
        # A path is cut in the middle when narrow: both of its ends say the most.
        self.folder_label = OneLineLabel(Qt.TextElideMode.ElideMiddle, self)
        self.folder_label.setTextInteractionFlags(SELECTABLE)
        self.folder_label.setObjectName("taskFolder")
        self.folder_size = QLabel(self)
        self.folder_size.setObjectName("taskFolderSize")
        self.folder_size.setProperty("role", "faint")
        self.folder_size.setFont(theme.font("small"))
        self.open_folder = self._link(t("task.open_folder"), "openFolderButton", self._on_open_folder)
        path_row.addWidget(self.folder_label, 1)
        path_row.addWidget(self.folder_size)
        path_row.addWidget(self.open_folder)
        column.addLayout(path_row)
        self.session_size = QLabel(self)
        self.session_size.setObjectName("taskSessionSize")
        self.session_size.setProperty("role", "faint")
        self.session_size.setFont(theme.font("small"))
        column.addWidget(self.session_size)
        # 打开 that found no file manager says so here, with the path to copy.
        self.open_failure = OpenFailure(self)
        column.addWidget(self.open_failure)
        self._build_cleanup(column)

    def _build_cleanup(self, column: QVBoxLayout) -> None:
        """「文件夹将于 12月2日 清理」 with 保留, and why 保留 failed when it did."""
        self.cleanup_box = QWidget(self)
        cleanup_row = QHBoxLayout(self.cleanup_box)
        cleanup_row.setContentsMargins(0, 2, 0, 0)
        cleanup_row.setSpacing(8)
        self.cleanup_label = WrappedLabel("", self.cleanup_box)
        self.cleanup_label.setObjectName("taskCleanup")
        self.cleanup_label.setProperty("role", "muted")
        self.cleanup_label.setFont(theme.font("small"))
        self.cleanup_label.setTextFormat(Qt.TextFormat.PlainText)
        self.keep_button = self._link(t("cost.keep"), "keepFolderButton", self._on_keep)
        self.keep_button.setParent(self.cleanup_box)
        self.keep_button.setToolTip(t("cost.keep_tip"))
        cleanup_row.addWidget(self.cleanup_label, 1)
        cleanup_row.addWidget(self.keep_button, 0, Qt.AlignmentFlag.AlignVCenter)
        column.addWidget(self.cleanup_box)
        self.keep_error = WrappedLabel("", self)
        self.keep_error.setObjectName("keepError")
        self.keep_error.setProperty("role", "danger")
        self.keep_error.setFont(theme.font("small"))
        self.keep_error.setTextFormat(Qt.TextFormat.PlainText)
        self.keep_error.hide()
        column.addWidget(self.keep_error)

    def _link(self, text: str, name: str, slot: Callable[[], None]) -> QPushButton:
        button = QPushButton(text, self)
        button.setObjectName(name)
        button.setFlat(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.clicked.connect(lambda _checked=False: slot())
        return button

    @property
    def cleanup_shown(self) -> bool:
        return not self.cleanup_box.isHidden()

    def set_detail(self, detail: TaskDetail) -> None:
        if detail.task.id != self._task_id:
            self._task_id = detail.task.id
            self.keep_error.hide()
            self.open_failure.hide()
        self.folder_label.set_full_text(detail.folder)
        self.folder_size.setText(human_size(detail.folder_bytes) if detail.folder_bytes > 0 else "")
        self.folder_size.setVisible(detail.folder_bytes > 0)
        session = session_line(detail)
        self.session_size.setText(session)
        self.session_size.setVisible(bool(session))
        self.open_folder.setVisible(bool(detail.folder) and Path(detail.folder).is_dir())
        cleanup = cleanup_line(detail, self._now())
        self.cleanup_label.setText(cleanup)
        self.cleanup_box.setVisible(bool(cleanup))
        keeping = self._keeping == detail.task.id
        self.keep_button.setEnabled(not keeping)
        self.keep_button.setText(t("cost.keeping") if keeping else t("cost.keep"))
        self.setVisible(bool(detail.folder))

    def shutdown(self) -> None:
        self._calls.cancel_all()
        self._keeping = None

    def _on_keep(self) -> None:
        task_id = self._task_id
        if task_id is None or self._keeping == task_id:
            return
        self._keeping = task_id
        self.keep_error.hide()
        self.keep_button.setEnabled(False)
        self.keep_button.setText(t("cost.keeping"))
        self._calls.start(
            self._tasks.keep(task_id),
            done=lambda detail: self._kept(task_id, detail, None),
            failed=lambda exc: self._kept(task_id, None, exc),
        )

    def _kept(self, task_id: str, detail: TaskDetail | None, exc: Exception | None) -> None:
        if self._keeping == task_id:
            self._keeping = None
        if task_id != self._task_id:
            return
        self.keep_button.setEnabled(True)
        self.keep_button.setText(t("cost.keep"))
        if exc is not None:
            self.keep_error.setText(t("cost.keep_failed", reason=reason(exc)))
            self.keep_error.show()
            return
        if detail is not None:
            self.set_detail(detail)  # the date is gone at once; the detail reads the rest again
            self.kept.emit(detail)

    def _on_open_folder(self) -> None:
        folder = self.folder_label.full_text()
        if folder:
            self.open_failure.open(folder, folder=True)


class RunSection(QWidget):
    """● 「第 1 次 · 开始 · 34 步 · 12 分钟 ▸」, its error under it, and once opened its steps."""

    def __init__(
        self,
        task_id: str,
        position: int,
        run: RunView,
        load: StepsLoader,
        parent: QWidget | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("runRow")
        self.task_id = task_id
        self.position = position
        self.run = run
        self._load = load
        self._now = now
        self.waiting = True
        self.answered = False
        # Redraws the elapsed time while the run waits on the model; stopped otherwise.
        self._tick = QTimer(self)
        self._tick.setInterval(TICK_MS)
        self._tick.timeout.connect(self._refresh_line)
        self._steps: list[ActivityStep] = []
        self.dropped = 0
        self.steps_list: StepList | None = None
        self._reader: Reloader[list[dict[str, object]]] = Reloader(
            lambda: self._load(self.run.id), self._apply_steps, self._steps_failed
        )

        self.dot = StatusDot(run_dot(run), 7, self)
        self.toggle = QPushButton(self)
        self.toggle.setObjectName("runToggle")
        self.toggle.setFlat(True)
        self.toggle.setCheckable(True)
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.toggled.connect(self._on_toggled)
        # A narrow panel cuts the line rather than widening past its edge; the tooltip has it whole.
        self.toggle.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.error = WrappedLabel(run.error, self)
        self.error.setObjectName("runError")
        self.error.setProperty("role", "muted")
        self.error.setFont(theme.font("small"))
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.dropped_label = QLabel(self)
        self.dropped_label.setObjectName("runDropped")
        self.dropped_label.setProperty("role", "faint")
        self.dropped_label.setFont(theme.font("small"))
        self.dropped_label.hide()

        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(6)
        head.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(self.toggle, 1)
        self._under = QVBoxLayout()
        self._under.setContentsMargins(self.dot.sizeHint().width() + 6, 0, 0, 0)
        self._under.setSpacing(6)
        self._under.addWidget(self.error)
        self._under.addWidget(self.dropped_label)
        column = QVBoxLayout(self)
        column.setContentsMargins(12, 7, 12, 7)
        column.setSpacing(2)
        column.addLayout(head)
        column.addLayout(self._under)
        self.set_run(position, run)

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        self.toggle.setChecked(expanded)

    def line(self) -> str:
        """The folded line without its arrow (tests read this, people see it)."""
        return run_line(self.position, self.run, self._now(), self.waiting, self.answered)

    def steps(self) -> list[ActivityStep]:
        return list(self._steps)

    @property
    def waiting_on_model(self) -> bool:
        return model_wait_since(self.run) is not None

    def set_run(self, position: int, run: RunView, waiting: bool = True, answered: bool = False) -> None:
        """The run was read again: update the line, and the steps too while open and the run changed.
        `waiting`: the task still waits on what this run asked; `answered`: a later run took the answer."""
        changed = run != self.run
        self.position = position
        self.run = run
        self.waiting = waiting
        self.answered = answered
        self.dot.set_state(run_dot(run, waiting))
        if self.waiting_on_model:
            if not self._tick.isActive():
                self._tick.start()
        else:
            self._tick.stop()
        self.error.setText(run.error)
        self.error.setVisible(bool(run.error))
        self._refresh_line()
        if self.expanded and (changed or run.state != "ended"):
            self._reader.request()

    def shutdown(self) -> None:
        if shiboken6.isValid(self._tick):  # the widget may already be gone when its owner shuts down
            self._tick.stop()
        self._reader.reset()

    def _refresh_line(self) -> None:
        arrow = UNFOLDED if self.expanded else FOLDED
        self.toggle.setText(f"{self.line()} {arrow}" if self.run.steps or self._steps else self.line())
        hint = t("activity.collapse") if self.expanded else t("activity.expand")
        self.toggle.setToolTip(f"{self.line()}\n{hint}")

    def _on_toggled(self, expanded: bool) -> None:
        if expanded and self.steps_list is None:
            self.steps_list = StepList(self)
            self._under.addWidget(self.steps_list)
            self.steps_list.hide()
        if expanded:
            self._reader.request()
        if self.steps_list is not None:
            self.steps_list.setVisible(expanded and bool(self._steps))
        self.dropped_label.setVisible(expanded and self.dropped > 0)
        self._refresh_line()

    def _apply_steps(self, rows: list[dict[str, object]]) -> None:
        self._steps, self.dropped = parse_steps(rows)
        self.dropped_label.setText(t("task.steps_dropped", n=self.dropped))
        self.dropped_label.setVisible(self.expanded and self.dropped > 0)
        if self.steps_list is not None:
            self.steps_list.set_steps(self._steps)
            self.steps_list.setVisible(self.expanded and bool(self._steps))
        self._refresh_line()

    def _steps_failed(self, exc: Exception) -> None:
        self.dropped_label.setText(t("task.steps_failed", reason=str(exc) or type(exc).__name__))
        self.dropped_label.setVisible(self.expanded)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._refresh_line()
        super().changeEvent(event)
