"""The sidebar's search box: filters conversations and bots as you type (title, name, last line; any case).

Esc clears it, and only it: the box claims that Escape before any window or panel shortcut can take it, so
one press clears the search (a second, on the empty box, is free for the rest of the window, such as the
bot panel's close). `matches` is the one rule both the box and the list use, so what is typed and what is
kept can't drift apart.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLineEdit, QWidget

from ui import theme
from ui.i18n import t
from ui.icons import tinted_icon


def normalized(query: str) -> str:
    return " ".join(query.split()).casefold()


def matches(query: str, *texts: str) -> bool:
    """Whether every word of the query is in one of the texts (an empty query keeps everything)."""
    words = normalized(query).split()
    if not words:
        return True
    haystack = " ".join(normalized(text) for text in texts)
    return all(word in haystack for word in words)


class SidebarSearch(QLineEdit):
    queryChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebarSearch")
        self.setPlaceholderText(t("sidebar.search"))
        self.setClearButtonEnabled(True)
        self.setAccessibleName(t("sidebar.search"))
        self._icon = self.addAction(
            tinted_icon("search", theme.colors().faint), QLineEdit.ActionPosition.LeadingPosition
        )
        self.textChanged.connect(self.queryChanged)

    def event(self, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
            and self.text()
        ):
            event.accept()  # ours: it arrives as a key press instead of firing another widget's shortcut
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and self.text():
            self.clear()
            return
        super().keyPressEvent(event)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:  # the scheme changed: re-tint the drawn icon
            self._icon.setIcon(tinted_icon("search", theme.colors().faint))
        super().changeEvent(event)
