"""The in-place 「删除这个…?」 [删除] [取消] of a detail page (task or rule): asked where the person is, with
no modal dialog, and Cancel focused so Enter right after the click doesn't delete."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from ui import theme
from ui.wrapped_label import WrappedLabel


def small_button(text: str, name: str, slot: Callable[[], None], parent: QWidget) -> QPushButton:
    """A detail page's quiet action button."""
    button = QPushButton(text, parent)
    button.setObjectName(name)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setFont(theme.font("small"))
    button.clicked.connect(lambda _checked=False: slot())
    return button


class DeleteConfirm(QFrame):
    def __init__(
        self,
        question: str,
        labels: tuple[str, str, str],  # delete, deleting…, cancel
        on_delete: Callable[[], None],
        on_cancel: Callable[[], None],
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("taskConfirm")
        self._delete_text, self._busy_text, cancel_text = labels
        column = QVBoxLayout(self)
        column.setContentsMargins(12, 10, 12, 10)
        column.setSpacing(8)
        self.text = WrappedLabel(question, self)
        self.text.setObjectName("taskConfirmText")
        column.addWidget(self.text)
        buttons = QHBoxLayout()
        buttons.setSpacing(8)
        self.delete_button = small_button(self._delete_text, "taskConfirmDelete", on_delete, self)
        self.cancel_button = small_button(cancel_text, "taskCancelDelete", on_cancel, self)
        buttons.addWidget(self.delete_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        column.addLayout(buttons)
        self.hide()

    def ask(self) -> None:
        self.show()
        self.cancel_button.setFocus()  # deleting takes a choice

    def set_busy(self, busy: bool) -> None:
        """While the delete is under way the button says so and can't be pressed again."""
        self.delete_button.setEnabled(not busy)
        self.delete_button.setText(self._busy_text if busy else self._delete_text)
