"""The task chip under a reply that started background work: 「● 后台任务 · GPU 价格调研 · 进行中 ›」.

It follows the task's stage (the chat re-reads when the task changes) and opens the task when clicked.
`PressableRow` is the clickable, keyboard-reachable row it is made of; the task list's rows use it too.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QAbstractButton, QHBoxLayout, QSizePolicy, QStyle, QStyleOption, QWidget

from core.chat.views import TaskChip
from core.tasks.stage import stage_label
from ui import theme
from ui.elided_text import ElidedText
from ui.i18n import language, t
from ui.status_dot import StatusDot
from ui.theme import DotState


def dot_state(group: str, stage: str = "") -> DotState:
    """A task's dot: green working, amber needs you, red failed, grey ended."""
    if stage == "failed":
        return "failed"
    if group == "working":
        return "working"
    if group == "needs":
        return "needs"
    return "idle"


class ChipText(ElidedText):
    """One line at its natural width. Qt elides at fractional widths but measures in whole pixels, so a
    label exactly as wide as its advance would lose its last glyphs to "…"; a little slack keeps it whole."""

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(hint.width() + 2, hint.height())


class PressableRow(QAbstractButton):
    """A button made of child widgets: the stylesheet draws its background (hover included), Tab reaches it,
    and Space or a click anywhere on it emits `clicked`. Children ignore the mouse, so presses reach it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_Hover, True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        layout = self.layout()
        return layout.sizeHint() if layout is not None else super().sizeHint()

    def minimumSizeHint(self) -> QSize:
        layout = self.layout()
        return layout.minimumSize() if layout is not None else super().minimumSizeHint()

    def paintEvent(self, event: QPaintEvent) -> None:
        option = QStyleOption()
        option.initFrom(self)
        painter = QPainter(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_Widget, option, painter, self)


class ChipRow(PressableRow):
    """A chip under a reply: a state dot and one muted line, pressable as a whole. Task and rule chips
    differ only in what the line says and what a press opens."""

    opened = Signal(str)

    def __init__(self, object_name: str, dot: DotState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.dot = StatusDot(dot, 7, self)
        self.label = ChipText("", 1, self)
        self.label.setObjectName(f"{object_name}Text")
        self.label.setFont(theme.font("small"))
        # Its natural width, shrinking (with …) only when the column is narrower than the chip.
        self.label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._tint()
        row = QHBoxLayout(self)
        row.setContentsMargins(9, 4, 11, 4)
        row.setSpacing(5)
        row.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.label, 1)

    def show_line(self, dot: DotState, text: str) -> None:
        self.dot.set_state(dot)
        self.label.set_text(text)
        self.setText(text)  # not drawn (the label is): what tests and screen readers read
        self.updateGeometry()

    def _tint(self) -> None:
        self.label.set_color(theme.colors().muted)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)


class TaskChipRow(ChipRow):
    def __init__(self, chip: TaskChip, parent: QWidget | None = None) -> None:
        super().__init__("taskChip", dot_state(chip.group), parent)
        self.chip = chip
        self.set_chip(chip)
        self.clicked.connect(lambda: self.opened.emit(self.chip.task_id))

    def set_chip(self, chip: TaskChip) -> None:
        self.chip = chip
        label = stage_label(chip.stage, language()) if chip.stage else chip.stage_label
        self.show_line(dot_state(chip.group, chip.stage), t("task.chip", title=chip.title, stage=label))
