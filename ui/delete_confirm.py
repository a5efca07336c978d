"""The in-place 「删除这个…?」 [删除] [取消] of a detail page (task or rule): asked where the person is, with
no modal dialog, and Cancel focused so Enter right after the click doesn't delete. `DeleteFlow` is what the
page does with it: ask, delete once, say why a delete failed, and know when the item is gone."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from ui import theme
from ui.async_calls import AsyncCalls
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


class DeleteFlow:
    """Deleting the item a detail page shows: its delete button asks (the action row makes way for the
    confirm), the confirm deletes once, a failure is said and the actions come back, and the page calls
    `gone` when it reads the item gone, to learn whether this delete did it.

    `deleting` is the id being deleted, until the page reads it gone or the delete fails."""

    def __init__(
        self,
        question: str,
        labels: tuple[str, str, str],  # delete, deleting…, cancel
        parent: QWidget,
        action_row: QWidget,
        calls: AsyncCalls,
        *,
        current: Callable[[], str | None],
        shown: Callable[[], bool],
        delete: Callable[[str], Coroutine[Any, Any, object]],
        starting: Callable[[], None],
        failed: Callable[[Exception], None],
        reread: Callable[[], object],
    ) -> None:
        self.confirm = DeleteConfirm(question, labels, self.delete, self.cancel, parent)
        self._action_row = action_row
        self._calls = calls
        self._current = current
        self._shown = shown
        self._delete = delete
        self._starting = starting
        self._failed = failed
        self._reread = reread
        self.deleting: str | None = None

    def ask(self) -> None:
        if self._current() is None:
            return
        self._action_row.hide()
        self.confirm.ask()

    def cancel(self) -> None:
        self.confirm.hide()
        self._action_row.setVisible(self._shown())

    def delete(self) -> None:
        item_id = self._current()
        if item_id is None or self.deleting == item_id:
            return
        self.deleting = item_id
        self._starting()
        self.confirm.set_busy(True)
        self._calls.start(
            self._delete(item_id),
            done=lambda _none: self._ended(item_id, None),
            failed=lambda exc: self._ended(item_id, exc),
        )

    def gone(self, item_id: str) -> bool:
        """The page read `item_id` gone: True when this delete removed it (the page then says `deleted`)."""
        self.confirm.hide()
        if self.deleting != item_id:
            return False
        self.deleting = None
        return True

    def _ended(self, item_id: str, exc: Exception | None) -> None:
        self.confirm.set_busy(False)
        if item_id != self._current():
            self.deleting = None
            return
        if exc is not None:
            self.deleting = None
            self._failed(exc)
            self.cancel()
            return
        self._reread()  # reads "gone", then the page says `deleted`
