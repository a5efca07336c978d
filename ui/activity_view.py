"""A reply's folded 处理过程: one quiet line (用时 3.2 秒 · 4 步 ▸) that opens into the list of steps.

Step rows are built only when the line is first opened: most replies are never unfolded, and a long chat
should not carry hundreds of hidden widgets. A reasoning step is folded once more: one line
(思考 · 1,234 字 ▸) that opens into what the model thought, built on that first opening too.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.activity_steps import ActivityStep
from ui import formatting, theme
from ui.elided_text import ElidedText
from ui.i18n import t
from ui.icons import tinted_pixmap
from ui.status_dot import StatusDot
from ui.task_chip import PressableRow
from ui.wrapped_label import SELECTABLE, WrappedLabel

FOLDED = "▸"
UNFOLDED = "▾"


def summary_text(duration_ms: int, steps: int) -> str:
    """「用时 3.2 秒 · 4 步」, or just the step count when the reply was not timed."""
    if duration_ms <= 0:
        return formatting.step_count(steps)
    took = formatting.duration(duration_ms)
    return t("activity.summary", duration=took, steps=formatting.step_count(steps))


def working_text(steps: int) -> str:
    return t("activity.working", steps=formatting.step_count(steps)) if steps else t("activity.working_empty")


def step_meta(step: ActivityStep) -> str:
    """「输入 1.2k · 输出 310 · 2.4 秒」: tokens only for model steps, time only when measured."""
    parts = []
    if step.kind == "model" and (step.tokens_in or step.tokens_out):
        tokens_in = formatting.token_count(step.tokens_in)
        tokens_out = formatting.token_count(step.tokens_out)
        parts.append(t("step.tokens", tokens_in=tokens_in, tokens_out=tokens_out))
    if step.duration_ms > 0:
        parts.append(formatting.duration(step.duration_ms))
    return " · ".join(parts)


def reasoning_line(step: ActivityStep) -> str:
    """「思考 · 1,234 字」: how much the model thought, counted before the kept text was cut."""
    return t("step.reasoning", chars=f"{max(step.chars, len(step.detail)):,}")


def reasoning_cut(step: ActivityStep) -> str:
    """What a reasoning step says under its text when only the start was kept; empty when it is whole."""
    if step.chars <= len(step.detail):
        return ""
    return t("step.reasoning.cut", shown=f"{len(step.detail):,}", chars=f"{step.chars:,}")


class StepRow(QWidget):
    ICON_SIZE = 14

    def __init__(self, step: ActivityStep, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("activityStep")
        self.step = step
        c = theme.colors()

        self._icon = QLabel(self)
        self._icon.setFixedSize(self.ICON_SIZE + 2, self.ICON_SIZE + 2)
        self._icon.setToolTip(t(f"step.kind.{step.kind}"))
        self._paint_icon()

        # One line, cut with …: a step is scanned, not read; the whole title is in the tooltip.
        self.title = ElidedText(step.title, 1, self)
        self.title.setObjectName("stepTitle")
        self.title.setFont(theme.font("small"))
        self.title.set_color(c.text)

        meta = step_meta(step)
        self.meta = QLabel(meta, self)
        self.meta.setObjectName("stepMeta")
        self.meta.setProperty("role", "faint")
        self.meta.setFont(theme.font("caption"))
        self.meta.setVisible(bool(meta))

        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(8)
        head.addWidget(self._icon, 0, Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(self.title, 1)
        if not step.ok:
            head.addWidget(self._failed_mark())
        head.addWidget(self.meta)

        # A reasoning step's text is long prose, not a glance of output: folded to its line until asked for.
        reasoning = step.kind == "reasoning"
        self.detail = ElidedText("" if reasoning else step.detail, 3, self)
        self.detail.setObjectName("stepDetail")
        self.detail.setFont(theme.font("mono"))
        self.detail.set_color(c.muted)
        self.toggle: PressableRow | None = None
        self.thought: WrappedLabel | None = None
        self.cut_note: QLabel | None = None

        column = QVBoxLayout(self)
        column.setContentsMargins(12, 8, 12, 8)
        column.setSpacing(3)
        if reasoning:
            column.addWidget(self._reasoning_toggle(head))
        else:
            column.addLayout(head)
        self._detail_column = QVBoxLayout()
        self._detail_column.setContentsMargins(self.ICON_SIZE + 2 + 8, 0, 0, 0)
        self._detail_column.setSpacing(3)
        self._detail_column.addWidget(self.detail)
        column.addLayout(self._detail_column)

    @property
    def expanded(self) -> bool:
        """Whether a reasoning step shows its text (always False for other steps)."""
        return self.toggle is not None and self.toggle.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        if self.toggle is not None:
            self.toggle.setChecked(expanded)

    def _reasoning_toggle(self, head: QHBoxLayout) -> PressableRow:
        toggle = PressableRow(self)
        toggle.setObjectName("reasoningToggle")
        toggle.setCheckable(True)
        toggle.setLayout(head)
        for child in (self._icon, self.title, self.meta):
            child.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        toggle.toggled.connect(self._on_reasoning_toggled)
        self.toggle = toggle
        self._refresh_reasoning_line()
        return toggle

    def _refresh_reasoning_line(self) -> None:
        if self.toggle is None:
            return
        arrow = UNFOLDED if self.toggle.isChecked() else FOLDED
        self.title.set_text(f"{reasoning_line(self.step)} {arrow}")
        hint = "step.reasoning.collapse" if self.toggle.isChecked() else "step.reasoning.expand"
        self.toggle.setToolTip(t(hint))

    def _on_reasoning_toggled(self, expanded: bool) -> None:
        if expanded and self.thought is None:
            self.thought = WrappedLabel(self.step.detail, self)
            self.thought.setObjectName("reasoningText")
            self.thought.setTextFormat(Qt.TextFormat.PlainText)
            self.thought.setTextInteractionFlags(SELECTABLE)
            self.thought.setProperty("role", "muted")
            self.thought.setFont(theme.font("small"))
            self._detail_column.addWidget(self.thought)
            cut = reasoning_cut(self.step)
            if cut:
                self.cut_note = QLabel(cut, self)
                self.cut_note.setObjectName("reasoningCut")
                self.cut_note.setProperty("role", "faint")
                self.cut_note.setFont(theme.font("caption"))
                self._detail_column.addWidget(self.cut_note)
        for shown in (self.thought, self.cut_note):
            if shown is not None:
                shown.setVisible(expanded)
        self._refresh_reasoning_line()

    def _failed_mark(self) -> QWidget:
        mark = QWidget(self)
        row = QHBoxLayout(mark)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(2)
        row.addWidget(StatusDot("failed", 6, mark))
        label = QLabel(t("activity.failed"), mark)
        label.setObjectName("stepFailed")
        label.setProperty("role", "danger")
        label.setFont(theme.font("caption"))
        row.addWidget(label)
        return mark

    def _paint_icon(self) -> None:
        c = theme.colors()
        color = c.red if not self.step.ok else c.muted
        self._icon.setPixmap(tinted_pixmap(f"step-{self.step.kind}", color, self.ICON_SIZE))

    def changeEvent(self, event: QEvent) -> None:
        # A scheme switch re-polishes every widget; re-tint what was drawn with the old colours.
        if event.type() == QEvent.Type.StyleChange:
            self._paint_icon()
            self.title.set_color(theme.colors().text)
            self.detail.set_color(theme.colors().muted)
        super().changeEvent(event)


class StepList(QFrame):
    """The opened steps: one well, thin lines between rows, no nesting."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("activitySteps")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 2, 0, 2)
        self._layout.setSpacing(0)
        self._rows: list[StepRow] = []

    def rows(self) -> list[StepRow]:
        return list(self._rows)

    def set_steps(self, steps: Sequence[ActivityStep]) -> None:
        keep = 0
        while keep < min(len(steps), len(self._rows)) and self._rows[keep].step == steps[keep]:
            keep += 1
        # Live steps only ever grow, so normally this removes nothing and appends the new tail.
        while self._layout.count() > max(0, keep * 2 - 1):
            item = self._layout.takeAt(self._layout.count() - 1)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self._rows = self._rows[:keep]
        for step in steps[keep:]:
            if self._rows:
                line = QFrame(self)
                line.setObjectName("stepSeparator")
                line.setFixedHeight(1)
                self._layout.addWidget(line)
            row = StepRow(step, self)
            self._rows.append(row)
            self._layout.addWidget(row)


class ActivityView(QWidget):
    """The folded line plus its step list. `live=True` shows a green dot and 处理中… instead of 用时."""

    def __init__(self, live: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("activity")
        self._live = live
        self._steps: tuple[ActivityStep, ...] = ()
        self._duration_ms = 0
        self._list: StepList | None = None

        # A flat push button rather than a tool button: it can align its text flush left with the reply.
        self.toggle = QPushButton(self)
        self.toggle.setObjectName("activityToggle")
        self.toggle.setFont(theme.font("small"))
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.setFlat(True)
        self.toggle.setCheckable(True)
        self.toggle.toggled.connect(self._on_toggled)

        line = QHBoxLayout()
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(4)
        if live:
            self.dot: StatusDot | None = StatusDot("working", 7, self)
            line.addWidget(self.dot)
        else:
            self.dot = None
        line.addWidget(self.toggle)
        line.addStretch(1)

        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(0, 0, 0, 0)
        self._column.setSpacing(6)
        self._column.addLayout(line)
        self._refresh_line()

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        self.toggle.setChecked(expanded)

    def steps_list(self) -> StepList | None:
        return self._list

    def set_activity(self, steps: Sequence[ActivityStep], duration_ms: int = 0) -> None:
        if tuple(steps) == self._steps and duration_ms == self._duration_ms and self._steps:
            return  # a live reply calls this on every text delta; the steps rarely change
        self._steps = tuple(steps)
        self._duration_ms = duration_ms
        self._refresh_line()
        if self._list is not None:
            self._list.set_steps(self._steps)
        # A finished reply without steps has nothing to unfold; a live one keeps its 处理中… line.
        self.setVisible(self._live or bool(self._steps))

    def _refresh_line(self) -> None:
        if self._live:
            text = working_text(len(self._steps))
        else:
            text = summary_text(self._duration_ms, len(self._steps))
        arrow = (UNFOLDED if self.expanded else FOLDED) if self._steps else ""
        self.toggle.setText(f"{text} {arrow}".rstrip())
        self.toggle.setEnabled(bool(self._steps))
        self.toggle.setToolTip(t("activity.collapse") if self.expanded else t("activity.expand"))

    def _on_toggled(self, expanded: bool) -> None:
        if expanded and self._list is None:
            self._list = StepList(self)
            self._list.set_steps(self._steps)
            self._column.addWidget(self._list)
        if self._list is not None:
            self._list.setVisible(expanded)
        self._refresh_line()
