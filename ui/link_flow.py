"""A row of buttons or links that flows onto the next line when its place is too narrow for all of them
side by side (the bot panel's 连接 links, the channel settings' 连接 buttons): none is ever cut, and no
window grows a horizontal scroll bar for them."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class LinkFlow(QLayout):
    """Quiet links side by side while they fit; in a panel too narrow for that, each that does not fit goes
    under the one before, so none is ever cut."""

    def __init__(self, parent: QWidget, spacing: int, line_spacing: int) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self._line_spacing = line_spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:
        """All on one line."""
        hints = [item.sizeHint() for item in self._shown()]
        width = sum(h.width() for h in hints) + self._spacing * max(0, len(hints) - 1)
        return QSize(width, max((h.height() for h in hints), default=0))

    def minimumSize(self) -> QSize:
        """The widest link: narrower than all of them side by side, as they can go one under another."""
        hints = [item.sizeHint() for item in self._shown()]
        return QSize(max((h.width() for h in hints), default=0), max((h.height() for h in hints), default=0))

    def _shown(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty()]

    def _place(self, rect: QRect, move: bool) -> int:
        """Lay the links out in `rect` (only measure when not `move`); the height they take."""
        x, y, line = rect.x(), rect.y(), 0
        for item in self._shown():
            hint = item.sizeHint()
            if x > rect.x() and x + hint.width() > rect.x() + rect.width():
                x, y, line = rect.x(), y + line + self._line_spacing, 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._spacing
            line = max(line, hint.height())
        return y + line - rect.y()
