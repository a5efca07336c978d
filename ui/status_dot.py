"""The small coloured dot that, always next to a word, shows a state (working, needs you, failed, idle)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from ui import theme
from ui.theme import DotState


class StatusDot(QWidget):
    def __init__(self, state: DotState = "idle", diameter: int = 7, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state: DotState = state
        self._diameter = diameter
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    @property
    def state(self) -> DotState:
        return self._state

    def set_state(self, state: DotState) -> None:
        if state != self._state:
            self._state = state
            self.update()

    def sizeHint(self) -> QSize:
        return QSize(self._diameter + 4, self._diameter + 4)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(theme.colors().dot(self._state))
        radius = self._diameter / 2
        painter.drawEllipse(QPointF(self.width() / 2, self.height() / 2), radius, radius)
