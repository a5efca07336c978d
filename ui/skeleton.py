"""The window's first paint while the host starts: placeholder rows over the sidebar's list and a quiet
正在载入… / "Loading…" over the right pane, in the theme's colours, until the first read is shown.

The host needs about a second to start (the agent runtime's imports run in a worker thread), and the window
is on screen before that: without this it would stand there empty. The covers are plain child widgets that
follow their target's size, so nothing in the window has to know about them; `remove()` takes them away.
"""

from __future__ import annotations

import contextlib

from PySide6.QtCore import QEvent, QObject, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QWidget

from ui import theme
from ui.i18n import t
from ui.main_window import MainWindow

PLACEHOLDER_ROWS = 6
ROW_HEIGHT = 56
ROW_MARGIN = 14


class _Cover(QWidget):
    """Covers `target` edge to edge and keeps doing so as it is resized."""

    def __init__(self, target: QWidget, name: str) -> None:
        super().__init__(target)
        self.setObjectName(name)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self._target = target
        target.installEventFilter(self)
        self.setGeometry(target.rect())
        self.raise_()
        self.show()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._target and event.type() == QEvent.Type.Resize:
            self.setGeometry(self._target.rect())
        return False


def _faded(colour: str, alpha: int) -> QColor:
    made = QColor(colour)
    made.setAlpha(alpha)
    return made


class SkeletonRows(_Cover):
    """Where the bots and conversations will be: a few rows of an avatar and two bars."""

    def __init__(self, target: QWidget) -> None:
        super().__init__(target, "skeletonRows")

    def paintEvent(self, event: QPaintEvent) -> None:
        colours = theme.colors()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), QColor(colours.sidebar))
        painter.setPen(Qt.PenStyle.NoPen)
        block = _faded(colours.faint, 70)
        width = self.width() - 2 * ROW_MARGIN
        for row in range(PLACEHOLDER_ROWS):
            top = 8 + row * ROW_HEIGHT
            painter.setBrush(block)
            painter.drawEllipse(QRectF(ROW_MARGIN, top + 10, 32, 32))
            left = ROW_MARGIN + 44
            # Bars of a few lengths, so it reads as a list rather than a pattern.
            long_bar = max(40.0, (width - 44) * (0.85 - 0.1 * (row % 3)))
            painter.drawRoundedRect(QRectF(left, top + 13, long_bar * 0.6, 10), 5, 5)
            painter.drawRoundedRect(QRectF(left, top + 31, long_bar, 8), 4, 4)
        painter.end()


class SkeletonPane(_Cover):
    """Where the conversation will be: one muted line in the middle."""

    def __init__(self, target: QWidget) -> None:
        super().__init__(target, "skeletonPane")
        self.text = t("skeleton.loading")
        self.setAccessibleName(self.text)

    def paintEvent(self, event: QPaintEvent) -> None:
        colours = theme.colors()
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(colours.window))
        painter.setPen(QColor(colours.muted))
        painter.setFont(self.font())
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.text)
        painter.end()


class LoadingSkeleton:
    """The skeleton over `window` from now until `remove()` (after its first refresh)."""

    def __init__(self, window: MainWindow) -> None:
        self.rows = SkeletonRows(window.conversation_list)
        self.pane = SkeletonPane(window.pane)
        self._removed = False

    def shown(self) -> bool:
        return not self._removed and (self.rows.isVisible() or self.pane.isVisible())

    def remove(self) -> None:
        if self._removed:
            return
        self._removed = True
        for cover in (self.rows, self.pane):
            with contextlib.suppress(RuntimeError):  # gone with its window already
                cover.hide()
                cover.deleteLater()
