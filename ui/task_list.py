"""The simple task list (all bots): 进行中, 需要你 and 已完成 (last 30 days), each section only when it
has a task, and a quiet 「还没有后台任务」 when there is none. A row is a dot, the title, the stage and the
latest line; clicking it opens the task. It reads through the TaskFacade and re-reads when a task changes
while shown.

`TaskPane` is the frame both task panes share: a header with a back control and a title, and a scrolling
column as wide as the chat's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QKeySequence, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.tasks.facade import TaskFacade
from core.tasks.views import TaskView
from ui import formatting, theme
from ui.chat_view import MAX_COLUMN_WIDTH, MIN_SIDE_MARGIN
from ui.elided_text import ElidedText
from ui.i18n import language, t
from ui.reloader import Reloader
from ui.status_dot import StatusDot
from ui.task_chip import PressableRow, dot_state

log = logging.getLogger(__name__)

# Sections in the order they are shown; ended tasks only as far back as this.
SECTIONS = ("working", "needs", "ended")
ENDED_WINDOW_S = 30 * 24 * 3600
ARROW = "›"


def reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def section_label(text: str, parent: QWidget) -> QLabel:
    """A small grey label over a group (the design's `.t-label`)."""
    label = QLabel(text, parent)
    label.setObjectName("sectionLabel")
    label.setProperty("role", "muted")
    label.setFont(theme.font("small"))
    return label


class OneLineLabel(QLabel):
    """Text on one line, cut with … to the label's own width whenever that changes; the whole in a tooltip.
    `mode` says where to cut: the end for titles, the middle for paths (both ends of a path say the most)."""

    def __init__(
        self, mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def full_text(self) -> str:
        return self._full

    def set_full_text(self, text: str) -> None:
        self._full = text
        self.setToolTip(text)
        self._elide()

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, self._mode, max(self.width(), 40))
        if shown != self.text():
            self.setText(shown)


class TaskPane(QWidget):
    """Header (‹ back, title, optional action on the right) over a scrolling, centred column."""

    backRequested = Signal()

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)

        self.header = QWidget(self)
        self.header.setObjectName("paneHeader")
        self.header.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.back_button = QPushButton(self.header)
        self.back_button.setObjectName("backButton")
        self.back_button.setFlat(True)
        self.back_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.back_button.setFont(theme.font("small"))
        self.back_button.clicked.connect(self.backRequested)
        # A long title is cut rather than widening the pane; the whole title is in the tooltip.
        self.title_label = OneLineLabel(parent=self.header)
        self.title_label.setObjectName("paneTitle")
        self.title_label.setFont(theme.font("title"))
        self._header_layout = QHBoxLayout(self.header)
        self._header_layout.setSpacing(10)
        self._header_layout.addWidget(self.back_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self._header_layout.addWidget(self.title_label, 1)

        self._scroll = QScrollArea(self)
        self._scroll.setObjectName("paneScroll")
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.column = QWidget()
        self.column.setObjectName("paneColumn")
        self.column.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.column_layout = QVBoxLayout(self.column)
        self.column_layout.setSpacing(8)
        self._scroll.setWidget(self.column)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(self._scroll, 1)
        QShortcut(
            QKeySequence(Qt.Key.Key_Escape),
            self,
            self.backRequested.emit,
            Qt.ShortcutContext.WidgetWithChildrenShortcut,
        )
        self._fit_column(self.width())

    def set_title(self, title: str) -> None:
        self.title_label.set_full_text(title)

    def title(self) -> str:
        return self.title_label.full_text()

    def set_back_text(self, text: str) -> None:
        self.back_button.setText(f"‹ {text}")

    def add_header_action(self, widget: QWidget) -> None:
        self._header_layout.addWidget(widget, 0, Qt.AlignmentFlag.AlignVCenter)

    def resizeEvent(self, event: QResizeEvent) -> None:
        self._fit_column(event.size().width())
        super().resizeEvent(event)

    def _fit_column(self, width: int) -> None:
        side = max(MIN_SIDE_MARGIN, (width - MAX_COLUMN_WIDTH) // 2)
        self._header_layout.setContentsMargins(side, 14, side, 12)
        self.column_layout.setContentsMargins(side, 20, side, 24)


class TaskRow(PressableRow):
    """● title ··· stage · when ›, with the latest line under the title."""

    opened = Signal(str)

    def __init__(self, task: TaskView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("taskRow")
        self.task = task
        self.dot = StatusDot(dot_state(task.group, task.stage), 8, self)
        self.title = ElidedText(task.title, 1, self)
        self.title.setObjectName("taskRowTitle")
        parts = [task.stage_label]
        if task.group == "ended":
            parts.append(formatting.when(task.updated_at))
        self.meta = QLabel(f"{' · '.join(parts)}  {ARROW}", self)
        self.meta.setObjectName("taskRowMeta")
        self.meta.setProperty("role", "muted")
        self.meta.setFont(theme.font("small"))
        self.latest = ElidedText(" ".join(task.latest_line.split()), 1, self)
        self.latest.setObjectName("taskRowLatest")
        self.latest.setFont(theme.font("small"))
        self._tint()

        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(8)
        head.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(self.title, 1)
        head.addWidget(self.meta, 0, Qt.AlignmentFlag.AlignVCenter)
        under = QHBoxLayout()
        under.setContentsMargins(self.dot.sizeHint().width() + 8, 0, 0, 0)
        under.addWidget(self.latest)
        column = QVBoxLayout(self)
        column.setContentsMargins(14, 10, 14, 10)
        column.setSpacing(3)
        column.addLayout(head)
        column.addLayout(under)
        self.setAccessibleName(f"{task.title} · {task.stage_label}")
        self.clicked.connect(lambda: self.opened.emit(self.task.id))

    def _tint(self) -> None:
        c = theme.colors()
        self.title.set_color(c.text)
        self.latest.set_color(c.faint)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)


class TaskListView(TaskPane):
    taskOpened = Signal(str)

    def __init__(
        self, tasks: TaskFacade, parent: QWidget | None = None, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__("taskList", parent)
        self._tasks = tasks
        self._now = now
        self._active = False
        self._shown: list[TaskView] | None = None
        self._blocks: list[QWidget] = []
        self._section_labels: list[QLabel] = []
        self.rows: list[TaskRow] = []
        self._reader: Reloader[list[TaskView]] = Reloader(self._load, self._apply, self._failed)
        self.set_title(t("tasks.title"))
        self.set_back_text(t("tasks.back_to_chat"))

        self.hint = QLabel(t("tasks.empty"), self.column)
        self.hint.setObjectName("tasksEmpty")
        self.hint.setProperty("role", "faint")
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.hint.hide()
        self._sections = QVBoxLayout()
        self._sections.setContentsMargins(0, 0, 0, 0)
        self._sections.setSpacing(8)
        self.column_layout.addLayout(self._sections)
        self.column_layout.addWidget(self.hint, 1)
        self.column_layout.addStretch(0)

    # -- what the window drives ------------------------------------------------------------------------

    def open(self) -> None:
        """The list is shown: read it now, and again whenever a task changes until it is closed."""
        self._active = True
        self._reader.request()

    def close_pane(self) -> None:
        self._active = False

    async def reload(self) -> None:
        await self._reader.request()

    def on_task_changed(self, _task_id: str) -> None:
        if self._active:
            self._reader.request()

    def shutdown(self) -> None:
        self._active = False
        self._reader.reset()

    def section_titles(self) -> list[str]:
        """The section labels as shown, top to bottom (tests read this, people see it)."""
        return [label.text() for label in self._section_labels]

    # -- reading ---------------------------------------------------------------------------------------

    async def _load(self) -> list[TaskView]:
        return await self._tasks.list_tasks(lang=language())

    def _failed(self, exc: Exception) -> None:
        self._clear()
        self._shown = None
        self.hint.setText(t("tasks.load_failed", reason=reason(exc)))
        self.hint.show()

    def _apply(self, tasks: list[TaskView]) -> None:
        since = self._now() - ENDED_WINDOW_S
        shown = [task for task in tasks if task.group != "ended" or task.updated_at >= since]
        if shown == self._shown:
            return  # nothing a person would see changed: keep rows, hover and focus
        self._shown = shown
        self._clear()
        for group in SECTIONS:
            members = sorted((task for task in shown if task.group == group), key=lambda v: -v.updated_at)
            if members:
                self._add_section(t(f"tasks.section.{group}"), members)
        self.hint.setText(t("tasks.empty"))
        self.hint.setVisible(not shown)

    def _clear(self) -> None:
        for block in self._blocks:
            self._sections.removeWidget(block)
            block.hide()
            block.deleteLater()
        self._blocks = []
        self._section_labels = []
        self.rows = []

    def _add_section(self, title: str, tasks: list[TaskView]) -> None:
        block = QWidget(self.column)
        block.setObjectName("taskSection")
        layout = QVBoxLayout(block)
        layout.setContentsMargins(0, 0, 0, 10)
        layout.setSpacing(6)
        label = section_label(title, block)
        label.setContentsMargins(4, 0, 0, 0)
        layout.addWidget(label)
        self._section_labels.append(label)
        well = QFrame(block)
        well.setObjectName("taskWell")
        rows = QVBoxLayout(well)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(0)
        for position, task in enumerate(tasks):
            if position:
                line = QFrame(well)
                line.setObjectName("taskRowLine")
                line.setFixedHeight(1)
                rows.addWidget(line)
            row = TaskRow(task, well)
            row.opened.connect(self.taskOpened)
            rows.addWidget(row)
            self.rows.append(row)
        layout.addWidget(well)
        self._sections.addWidget(block)
        self._blocks.append(block)
