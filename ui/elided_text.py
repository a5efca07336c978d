"""A few lines of text, each cut with … at the widget's width: long tool output kept to one glance."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

TOOLTIP_LIMIT = 2000


class ElidedText(QWidget):
    def __init__(self, text: str = "", max_lines: int = 3, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._max_lines = max_lines
        self._lines: list[str] = []
        self._full = ""
        self._color: QColor | None = None
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.set_text(text)

    def text(self) -> str:
        return self._full

    def shown_lines(self) -> list[str]:
        """The lines as drawn before eliding to width (tests read this, people see it)."""
        return list(self._lines)

    def set_color(self, color: str) -> None:
        self._color = QColor(color)
        self.update()

    def set_text(self, text: str) -> None:
        self._full = text
        lines = [line.rstrip() for line in text.strip("\n").splitlines()]
        while lines and not lines[-1]:
            lines.pop()
        shown = lines[: self._max_lines]
        if len(lines) > self._max_lines and shown:
            shown[-1] = shown[-1] + " …"
        self._lines = shown
        self.setToolTip(text if len(text) <= TOOLTIP_LIMIT else text[:TOOLTIP_LIMIT] + "…")
        self.setVisible(bool(shown))
        self.updateGeometry()
        self.update()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.FontChange:
            self.updateGeometry()
        super().changeEvent(event)

    def sizeHint(self) -> QSize:
        fm = QFontMetrics(self.font())
        widest = max((fm.horizontalAdvance(line) for line in self._lines), default=0)
        return QSize(widest, fm.lineSpacing() * len(self._lines))

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.sizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setFont(self.font())
        painter.setPen(self._color or self.palette().color(self.foregroundRole()))
        fm = QFontMetrics(self.font())
        y = 0
        for line in self._lines:
            shown = fm.elidedText(line.expandtabs(4), Qt.TextElideMode.ElideRight, self.width())
            painter.drawText(QRect(0, y, self.width(), fm.lineSpacing()), Qt.AlignmentFlag.AlignLeft, shown)
            y += fm.lineSpacing()
