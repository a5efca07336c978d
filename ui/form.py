"""The building blocks of Errand's settings pages and dialogs (docs/desktop.md#look: a small label over a
`--well` list of rows): `Section`, `FieldRow`, `Switch`, `Combo`, the small inputs and buttons, the words for
a refused field, and the footer every dialog ends with (the error line over Cancel and the confirm button).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QKeyEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.errors import InvalidInputError
from ui import theme
from ui.answer_bar import reason
from ui.i18n import t
from ui.wrapped_label import WrappedLabel

LABEL_WIDTH = 96


class Switch(QCheckBox):
    """An on/off switch: a QCheckBox (same API and signals) drawn as a small track with a knob, the text on
    its right."""

    TRACK_W = 30
    TRACK_H = 18
    GAP = 8

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setObjectName("settingsSwitch")
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def sizeHint(self) -> QSize:
        text_w = self.fontMetrics().horizontalAdvance(self.text()) if self.text() else 0
        height = max(self.TRACK_H, self.fontMetrics().height()) + 4
        return QSize(self.TRACK_W + (self.GAP + text_w if text_w else 0) + 2, height)

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def hitButton(self, pos: QPoint) -> bool:
        return True  # the whole widget, text included, toggles

    def paintEvent(self, event: QPaintEvent) -> None:
        c = theme.colors()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        top = (self.height() - self.TRACK_H) / 2
        track = QRectF(1, top, self.TRACK_W, self.TRACK_H)
        on = self.isChecked()
        painter.setPen(Qt.PenStyle.NoPen)
        fill = QColor(c.accent if on else c.line)
        if not self.isEnabled():
            fill.setAlphaF(0.5)
        painter.setBrush(fill)
        painter.drawRoundedRect(track, self.TRACK_H / 2, self.TRACK_H / 2)
        knob = self.TRACK_H - 4
        x = track.right() - knob - 2 if on else track.left() + 2
        painter.setBrush(QColor("#ffffff"))
        painter.drawEllipse(QRectF(x, top + 2, knob, knob))
        if self.text():
            painter.setPen(QColor(c.text if self.isEnabled() else c.faint))
            painter.setFont(self.font())
            text_rect = self.rect().adjusted(self.TRACK_W + self.GAP + 1, 0, 0, 0)
            align = Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft
            painter.drawText(text_rect, align, self.text())
        painter.end()


class Combo(QComboBox):
    """A combo box whose arrow is drawn here, in the scheme's muted colour: a styled combo loses the
    platform's arrow, and an image would need one file per scheme."""

    ARROW_ZONE = 22

    def __init__(self, parent: QWidget | None = None, editable: bool = False) -> None:
        super().__init__(parent)
        self.setObjectName("settingsCombo")
        self.setEditable(editable)
        if editable:
            self.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        colour = theme.colors().muted if self.isEnabled() else theme.colors().faint
        painter.setPen(QPen(QColor(colour), 1.4, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
        cx = self.width() - self.ARROW_ZONE / 2 - 2
        cy = self.height() / 2
        painter.drawPolyline([QPointF(cx - 4, cy - 2), QPointF(cx, cy + 2), QPointF(cx + 4, cy - 2)])
        painter.end()


def small_label(text: str, role: str, name: str, parent: QWidget) -> WrappedLabel:
    """A wrapped small line in a role colour ("faint" hints, "danger" errors); hidden while empty."""
    label = WrappedLabel(text, parent)
    label.setObjectName(name)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setProperty("role", role)
    label.setFont(theme.font("small"))
    label.setVisible(bool(text))
    return label


class FieldRow(QWidget):
    """One row of a group: a label on the left; on the right the control, a hint under it, and the error
    a refused save names this field with."""

    def __init__(
        self,
        label: str,
        control: QWidget | QLayout,
        hint: str = "",
        parent: QWidget | None = None,
        margins: tuple[int, int] = (14, 10),
    ) -> None:
        """`margins` are (side, top/bottom): rows in a well are inset; rows on a card are not."""
        super().__init__(parent)
        self.setObjectName("settingsRow")
        self.label = QLabel(label, self)
        self.label.setObjectName("settingsRowLabel")
        self.label.setMinimumWidth(LABEL_WIDTH)
        self.hint = small_label(hint, "faint", "settingsHint", self)
        self.error = small_label("", "danger", "settingsError", self)
        grid = QGridLayout(self)
        grid.setContentsMargins(margins[0], margins[1], margins[0], margins[1])
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(4)
        grid.addWidget(self.label, 0, 0, Qt.AlignmentFlag.AlignTop)
        if isinstance(control, QLayout):
            grid.addLayout(control, 0, 1)
        else:
            grid.addWidget(control, 0, 1)
        grid.addWidget(self.hint, 1, 1)
        grid.addWidget(self.error, 2, 1)
        grid.setColumnStretch(1, 1)
        # Line the label up with the control's text, not the top of its frame.
        self.label.setContentsMargins(0, 5, 0, 0)

    def set_hint(self, text: str) -> None:
        self.hint.setText(text)
        self.hint.setVisible(bool(text))

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    def clear_error(self) -> None:
        self.error.clear()
        self.error.hide()

    @property
    def error_text(self) -> str:
        return "" if self.error.isHidden() else self.error.text()


class Section(QWidget):
    """A small label over a well of rows with thin lines between them."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(title, self)
        self.title.setObjectName("settingsSectionLabel")
        self.title.setFont(theme.font("small"))
        self.well = QFrame(self)
        self.well.setObjectName("settingsWell")
        self._rows = QVBoxLayout(self.well)
        self._rows.setContentsMargins(0, 2, 0, 2)
        self._rows.setSpacing(0)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(6)
        column.addWidget(self.title)
        column.addWidget(self.well)

    def add(self, row: QWidget, *, ruled: bool = True) -> QWidget:
        """`ruled=False`: no line above it (a row that brings its own, to hide with it)."""
        if ruled and self._rows.count():
            line = QFrame(self.well)
            line.setObjectName("settingsLine")
            line.setFixedHeight(1)
            self._rows.addWidget(line)
        self._rows.addWidget(row)
        return row


def line_input(parent: QWidget, placeholder: str = "") -> QLineEdit:
    field = QLineEdit(parent)
    field.setObjectName("settingsInput")
    field.setPlaceholderText(placeholder)
    field.setClearButtonEnabled(False)
    return field


def button(text: str, parent: QWidget, kind: str = "") -> QPushButton:
    made = QPushButton(text, parent)
    made.setObjectName("formButton")
    if kind:
        made.setProperty("kind", kind)
    made.setCursor(Qt.CursorShape.PointingHandCursor)
    return made


def field_message(exc: InvalidInputError) -> str:
    """What to say under a refused field: our own sentence for the fields we know, else the core's."""
    known = {
        "name": "settings.error.name",
        "avatar": "settings.error.avatar",
        "provider": "settings.error.base_url",
        "baseUrl": "settings.error.base_url",
        "model": "settings.error.model",
        "apiKey": "settings.error.api_key",
        "preset": "settings.error.preset",
        "taskSlots": "settings.error.task_slots",
        "quietHours.start": "settings.error.quiet",
        "quietHours.end": "settings.error.quiet",
    }
    key = known.get(exc.field)
    return t(key) if key else reason(exc)


def dialog_footer(error: QWidget, cancel: QPushButton, confirm: QPushButton) -> QVBoxLayout:
    """The foot of a dialog: the error line (hidden until something is refused), then Cancel and the
    confirm button on the right. The caller sets its margins."""
    buttons = QHBoxLayout()
    buttons.addStretch(1)
    buttons.addWidget(cancel)
    buttons.addWidget(confirm)
    foot = QVBoxLayout()
    foot.setSpacing(6)
    foot.addWidget(error)
    foot.addLayout(buttons)
    return foot


class EnterSubmits(QObject):
    """Enter in a section's fields saves that section (a price, the search setup), instead of reaching the
    dialog's default button, which would save the preferences and close the dialog under the typing."""

    def __init__(self, submit: Callable[[], None], parent: QObject) -> None:
        super().__init__(parent)
        self._submit = submit

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        enter = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) and event.key() in enter:
            self._submit()
            return True
        return super().eventFilter(watched, event)
