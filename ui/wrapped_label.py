"""A word-wrapping label that remembers its height per width, and the flags that make text selectable.

The chat's messages, the task detail and the needs-you rows (and the question card they share) use it."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLabel, QWidget

SELECTABLE = Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard


class WrappedLabel(QLabel):
    """A word-wrapping label that remembers its height per width.

    QLabel lays its text out again on every height query, and a scroll area's layout pass asks every message
    several times, at more than one width; with a few dozen messages that alone stalls the loop for tens of
    milliseconds whenever a streaming reply grows by a line. The answer only changes with text, font, style.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self._heights: dict[int, int] = {}
        self.setWordWrap(True)
        self.setMinimumWidth(1)

    def setText(self, text: str) -> None:
        self._heights.clear()
        super().setText(text)

    def heightForWidth(self, width: int) -> int:
        height = self._heights.get(width)
        if height is None:
            if len(self._heights) > 16:
                self._heights.clear()
            height = self._heights[width] = super().heightForWidth(width)
        return height

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.StyleChange, QEvent.Type.FontChange):
            self._heights.clear()
        super().changeEvent(event)
