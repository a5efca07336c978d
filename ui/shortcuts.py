"""The window's keyboard shortcuts in one table, and the dialog that lists them (设置 › 键盘快捷键, or F1).

One table so the keys a person can press and the keys the list shows cannot drift apart: the window binds
every `Shortcut` whose action it has, and the dialog shows every row (the composer's own keys included,
which the composer binds itself)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QGridLayout, QLabel, QVBoxLayout, QWidget

from ui import theme
from ui.i18n import t


@dataclass(frozen=True)
class Shortcut:
    action: str  # what the window calls; the dialog's words are `shortcuts.<action>`
    keys: str  # a QKeySequence portable string, shown in the platform's own way


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("new_chat", "Ctrl+N"),
    Shortcut("new_task", "Ctrl+Shift+N"),
    Shortcut("search", "Ctrl+F"),
    Shortcut("settings", "Ctrl+,"),
    Shortcut("next_conversation", "Ctrl+PgDown"),
    Shortcut("previous_conversation", "Ctrl+PgUp"),
    Shortcut("shortcuts", "F1"),
)

# Keys the composer handles itself; listed so the one place shows them all.
COMPOSER_KEYS: tuple[Shortcut, ...] = (
    Shortcut("send", "Return"),
    Shortcut("new_line", "Shift+Return"),
)


def shown_keys(keys: str) -> str:
    return QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)


class ShortcutsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("shortcutsDialog")
        self.setWindowTitle(t("shortcuts.title"))
        column = QVBoxLayout(self)
        column.setContentsMargins(24, 20, 24, 16)
        column.setSpacing(12)
        grid = QGridLayout()
        grid.setHorizontalSpacing(24)
        grid.setVerticalSpacing(8)
        self.rows: list[tuple[str, str]] = []
        for row, shortcut in enumerate((*SHORTCUTS, *COMPOSER_KEYS)):
            words = t(f"shortcuts.{shortcut.action}")
            keys = shown_keys(shortcut.keys)
            self.rows.append((words, keys))
            grid.addWidget(QLabel(words, self), row, 0)
            key_label = QLabel(keys, self)
            key_label.setObjectName("shortcutKeys")
            key_label.setFont(theme.font("small"))
            key_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(key_label, row, 1)
        column.addLayout(grid)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.button(QDialogButtonBox.StandardButton.Close).setText(t("shortcuts.close"))
        buttons.rejected.connect(self.reject)
        column.addWidget(buttons)
