"""The task list (all bots): 进行中, 需要你 and 已完成 (last 30 days), each section only when it has a task,
and a quiet 「还没有后台任务」 when there is none. A row is a dot, the title, the stage and the latest line;
clicking it opens the task. It reads through the TaskFacade and re-reads when a task changes while shown.
Rows are model rows painted by a delegate, so a thousand tasks cost what the screen shows.

`TaskPane` is the frame both task panes share: a header with a back control and a title, and a scrolling
column as wide as the chat's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPainterPath, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from core.tasks.facade import TaskFacade
from core.tasks.views import TaskView
from ui import formatting, theme
from ui.chat_view import MAX_COLUMN_WIDTH, MIN_SIDE_MARGIN
from ui.escape_key import bind_escape
from ui.i18n import language, t
from ui.reloader import Reloader
from ui.task_chip import dot_state

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
        bind_escape(self, self.backRequested.emit)
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


# -- the list itself: one model row per section label or task, painted by a delegate -------------------
#
# A thousand tasks as a thousand row widgets took over a second to build; as model rows the view lays out
# and paints only what is on screen.

RowKind = str  # "section" | "task"
TaskRole = Qt.ItemDataRole.UserRole + 1
KindRole = Qt.ItemDataRole.UserRole + 2
PlaceRole = Qt.ItemDataRole.UserRole + 3  # (first in its section, last in its section)

Index = QModelIndex | QPersistentModelIndex


def row_meta(task: TaskView) -> str:
    """「进行中  ›」, or for an ended task 「已完成 · 昨天  ›」."""
    parts = [task.stage_label]
    if task.group == "ended":
        parts.append(formatting.when(task.updated_at))
    return f"{' · '.join(parts)}  {ARROW}"


class TaskListModel(QAbstractListModel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[RowKind, str | TaskView, bool, bool]] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's own signature
        return 0 if parent.isValid() else len(self._rows)

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        if self._rows[index.row()][0] == "section":
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        kind, value, first, last = self._rows[index.row()]
        if role == KindRole:
            return kind
        if role == PlaceRole:
            return (first, last)
        if kind == "section":
            return value if role == Qt.ItemDataRole.DisplayRole else None
        assert isinstance(value, TaskView)
        if role == Qt.ItemDataRole.DisplayRole:
            return value.title
        if role == TaskRole:
            return value
        if role == Qt.ItemDataRole.ToolTipRole:
            return value.title
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{value.title} · {value.stage_label}"
        return None

    def set_sections(self, sections: list[tuple[str, list[TaskView]]]) -> None:
        self.beginResetModel()
        self._rows = []
        for title, tasks in sections:
            self._rows.append(("section", title, False, False))
            for position, task in enumerate(tasks):
                self._rows.append(("task", task, position == 0, position == len(tasks) - 1))
        self.endResetModel()

    def shape(self, row: int) -> tuple[str, bool]:
        """What a row's height depends on: a section (and whether it is the first row), or a task (and
        whether it has a latest line under its title; without one it is one line high)."""
        kind, value, _first, _last = self._rows[row]
        if kind == "section":
            return ("section", row == 0)
        return ("task", isinstance(value, TaskView) and bool(value.latest_line.strip()))

    def tasks(self) -> list[TaskView]:
        return [value for kind, value, _f, _l in self._rows if kind == "task" and isinstance(value, TaskView)]

    def sections(self) -> list[str]:
        return [str(value) for kind, value, _f, _l in self._rows if kind == "section"]

    def row_of(self, task_id: str) -> int:
        for row, (kind, value, _f, _l) in enumerate(self._rows):
            if kind == "task" and isinstance(value, TaskView) and value.id == task_id:
                return row
        return -1


def column_rect(full: QRect) -> QRect:
    """The centred column inside a row, as wide as the chat's."""
    side = max(MIN_SIDE_MARGIN, (full.width() - MAX_COLUMN_WIDTH) // 2)
    return full.adjusted(side, 0, -side, 0)


class TaskRowDelegate(QStyledItemDelegate):
    """Section labels, and task rows drawn as one well per section with a thin line between rows:
    ● title ··· stage · when ›, the latest line under the title."""

    PAD_X = 14
    PAD_Y = 10
    GAP = 3
    SECTION_TOP = 14
    SECTION_BOTTOM = 6

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # Row heights depend only on the fonts and the row's shape; Qt asks for every row's size on each
        # reset, so measuring once keeps a 1,000-task list from spending frames on font metrics.
        self._heights: dict[tuple[str, bool], int] = {}

    def forget_metrics(self) -> None:
        """The fonts changed (theme or system): measure again."""
        self._heights.clear()

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        model = index.model()
        # Read straight from our model: going through index.data() converts values for every row.
        shape = model.shape(index.row()) if isinstance(model, TaskListModel) else ("task", True)
        height = self._heights.get(shape)
        if height is None:
            height = self._heights[shape] = self._measure(*shape)
        return QSize(200, height)

    def _measure(self, kind: str, flag: bool) -> int:
        small = QFontMetrics(theme.font("small"))
        if kind == "section":
            return (0 if flag else self.SECTION_TOP) + small.height() + self.SECTION_BOTTOM
        body = QFontMetrics(theme.font("body"))
        return self.PAD_Y * 2 + body.height() + ((self.GAP + small.height()) if flag else 0)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        c = theme.colors()
        rect = column_rect(option.rect)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if index.data(KindRole) == "section":
            small = theme.font("small")
            painter.setFont(small)
            painter.setPen(QColor(c.muted))
            text_rect = QRect(
                rect.left() + 4,
                rect.bottom() - self.SECTION_BOTTOM - QFontMetrics(small).height(),
                rect.width() - 4,
                QFontMetrics(small).height(),
            )
            painter.drawText(
                text_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, str(index.data())
            )
            painter.restore()
            return
        task = index.data(TaskRole)
        first, last = index.data(PlaceRole) or (True, True)
        if not isinstance(task, TaskView):
            painter.restore()
            return
        self._paint_well(painter, QRectF(rect), first, last, QColor(c.well))
        hovered = bool(option.state & QStyle.StateFlag.State_MouseOver)
        if hovered:
            self._paint_well(painter, QRectF(rect), first, last, QColor(c.hover))
        if not first:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(c.line))
            painter.drawRect(QRectF(rect.left() + self.PAD_X, rect.top(), rect.width() - 2 * self.PAD_X, 1))

        self._paint_text(painter, rect, task)
        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(QColor(c.accent))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(QRectF(rect).adjusted(0.5, 0.5, -0.5, -0.5), 10, 10)
        painter.restore()

    def _paint_text(self, painter: QPainter, rect: QRect, task: TaskView) -> None:
        c = theme.colors()
        body_font = theme.font("body")
        small_font = theme.font("small")
        body_fm = QFontMetrics(body_font)
        small_fm = QFontMetrics(small_font)
        inner = rect.adjusted(self.PAD_X, self.PAD_Y, -self.PAD_X, -self.PAD_Y)
        dot_d = 8
        title_h = body_fm.height()
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(c.dot(dot_state(task.group, task.stage)))
        painter.drawEllipse(
            QPointF(inner.left() + 2 + dot_d / 2, inner.top() + title_h / 2), dot_d / 2, dot_d / 2
        )
        text_left = inner.left() + dot_d + 4 + 8
        meta = row_meta(task)
        meta_w = small_fm.horizontalAdvance(meta)
        painter.setFont(small_font)
        painter.setPen(QColor(c.muted))
        meta_rect = QRect(inner.right() - meta_w, inner.top(), meta_w, title_h)
        painter.drawText(meta_rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, meta)
        painter.setFont(body_font)
        painter.setPen(QColor(c.text))
        title_rect = QRect(text_left, inner.top(), max(0, meta_rect.left() - 12 - text_left), title_h)
        title = body_fm.elidedText(task.title, Qt.TextElideMode.ElideRight, title_rect.width())
        painter.drawText(title_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        latest = " ".join(task.latest_line.split())
        if latest:
            painter.setFont(small_font)
            painter.setPen(QColor(c.faint))
            line_rect = QRect(
                text_left, title_rect.bottom() + 1 + self.GAP, inner.right() - text_left, small_fm.height()
            )
            shown = small_fm.elidedText(latest, Qt.TextElideMode.ElideRight, line_rect.width())
            painter.drawText(line_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, shown)

    @staticmethod
    def _paint_well(painter: QPainter, rect: QRectF, first: bool, last: bool, colour: QColor) -> None:
        """A rectangle with the well's rounded corners only at the section's top and bottom."""
        radius = 10.0
        path = QPainterPath()
        path.addRoundedRect(rect, radius, radius)
        if not first:
            path.addRect(QRectF(rect.left(), rect.top(), rect.width(), radius))
        if not last:
            path.addRect(QRectF(rect.left(), rect.bottom() - radius, rect.width(), radius))
        path.setFillRule(Qt.FillRule.WindingFill)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawPath(path.simplified())


class TaskListView(TaskPane):
    """The tasks of all bots. `taskOpened(id)`: a row was clicked (or Enter on it); `newTaskRequested`:
    the header's 新任务."""

    taskOpened = Signal(str)
    newTaskRequested = Signal()

    def __init__(
        self, tasks: TaskFacade, parent: QWidget | None = None, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__("taskList", parent)
        self._tasks = tasks
        self._now = now
        self._active = False
        self._shown: list[TaskView] | None = None
        self._reader: Reloader[list[TaskView]] = Reloader(self._load, self._apply, self._failed)
        self.set_title(t("tasks.title"))
        self.set_back_text(t("tasks.back_to_chat"))
        self.new_task_button = QPushButton(t("tasks.new"), self.header)
        self.new_task_button.setObjectName("newTaskButton")
        self.new_task_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.new_task_button.setFont(theme.font("small"))
        self.new_task_button.clicked.connect(lambda _checked=False: self.newTaskRequested.emit())
        self.add_header_action(self.new_task_button)

        self.model = TaskListModel(self)
        self.list = QListView(self)
        self.list.setObjectName("taskListView")
        self.list.setModel(self.model)
        self.delegate = TaskRowDelegate(self.list)
        self.list.setItemDelegate(self.delegate)
        self.list.setFrameShape(QFrame.Shape.NoFrame)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.list.setMouseTracking(True)
        self.list.viewport().setAttribute(Qt.WidgetAttribute.WA_Hover)
        self.list.setViewportMargins(0, 16, 0, 16)
        self.list.clicked.connect(self._on_row)
        self.list.activated.connect(self._on_row)
        self.list.hide()

        self.hint = QLabel(t("tasks.empty"), self.column)
        self.hint.setObjectName("tasksEmpty")
        self.hint.setProperty("role", "faint")
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.hint.hide()
        self.column_layout.addWidget(self.hint, 1)
        layout = self.layout()
        if isinstance(layout, QVBoxLayout):
            layout.addWidget(self.list, 1)

    # -- what the window drives ------------------------------------------------------------------------

    def open(self) -> None:
        """The list is shown: read it now, and again whenever a task changes until it is closed."""
        self._active = True
        self._reader.request()

    def close_pane(self) -> None:
        self._active = False

    async def reload(self) -> None:
        await self._reader.request()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.StyleChange, QEvent.Type.FontChange):
            self.delegate.forget_metrics()  # the theme or the system font changed: rows measure again
        super().changeEvent(event)

    def on_task_changed(self, _task_id: str) -> None:
        if self._active:
            self._reader.request()

    def shutdown(self) -> None:
        self._active = False
        self._reader.reset()

    def section_titles(self) -> list[str]:
        """The section labels as shown, top to bottom (tests read this, people see it)."""
        return self.model.sections()

    def shown_tasks(self) -> list[TaskView]:
        """The task rows as shown, top to bottom."""
        return self.model.tasks()

    def row_rect(self, task_id: str) -> QRect:
        """Where a task's row is, in the list's viewport (tests click it)."""
        row = self.model.row_of(task_id)
        return self.list.visualRect(self.model.index(row)) if row >= 0 else QRect()

    # -- reading ---------------------------------------------------------------------------------------

    async def _load(self) -> list[TaskView]:
        return await self._tasks.list_tasks(lang=language())

    def _failed(self, exc: Exception) -> None:
        self._shown = None
        self.model.set_sections([])
        self._show_hint(t("tasks.load_failed", reason=reason(exc)))

    def _apply(self, tasks: list[TaskView]) -> None:
        since = self._now() - ENDED_WINDOW_S
        shown = [task for task in tasks if task.group != "ended" or task.updated_at >= since]
        if shown == self._shown:
            return  # nothing a person would see changed: keep scroll and hover
        self._shown = shown
        sections = []
        for group in SECTIONS:
            members = sorted((task for task in shown if task.group == group), key=lambda v: -v.updated_at)
            if members:
                sections.append((t(f"tasks.section.{group}"), members))
        bar = self.list.verticalScrollBar()
        keep = bar.value()
        self.model.set_sections(sections)
        bar.setValue(keep)
        if shown:
            self.hint.hide()
            self._scroll.hide()
            self.list.show()
        else:
            self._show_hint(t("tasks.empty"))

    def _show_hint(self, text: str) -> None:
        self.hint.setText(text)
        self.hint.show()
        self.list.hide()
        self._scroll.show()

    def _on_row(self, index: QModelIndex) -> None:
        task = index.data(TaskRole)
        if isinstance(task, TaskView):
            self.taskOpened.emit(task.id)
