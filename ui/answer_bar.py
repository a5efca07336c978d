"""The answering part of a needs-you row and of the question card in the conversation
(docs/attention.md#questions: "the same card in the conversation and in needs you"):

    [包月价] [按小时价] [回复…]            one button per option, then 回复… for free text
    [写下你的回答…            ] [发送]    the one-line box 回复… opens (Enter sends, Esc closes)
    没有成功:这个批准已经过期了           a refusal, under it, in red

or [批准一次] [拒绝], [重试] [打开任务]: whatever actions it is given, in their order. The bar only asks
(`answered`, `actionRequested`); whoever owns it runs the action, turns it off while it runs (`set_busy`),
and says why when it was refused (`show_error`, which turns it back on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.errors import ErrandError, InvalidInputError
from ui import theme
from ui.escape_key import WIDGET, bind_escape
from ui.i18n import language, t
from ui.wrapped_label import WrappedLabel

# A one-line answer needs no more; wider, the box reads as a second composer.
REPLY_MAX_WIDTH = 460


def reason(exc: Exception) -> str:
    """What a person reads: the core's words in the UI's language (its English message when the core has
    none), without the name of the field a 422 is about."""
    if isinstance(exc, InvalidInputError) and not exc.key:
        return exc.message.removeprefix(f"{exc.field}: ")
    if isinstance(exc, ErrandError):
        return exc.words(language())
    return str(exc) or type(exc).__name__


class AnswerBar(QWidget):
    """`answered(text)` for an option or a sent reply (stripped, never empty); `actionRequested(action)` for
    any other button. Neither is emitted while the bar is busy."""

    answered = Signal(str)
    actionRequested = Signal(str)

    def __init__(
        self,
        options: Sequence[str] = (),
        reply_label: str | None = None,
        actions: Sequence[tuple[str, str]] = (),
        parent: QWidget | None = None,
    ) -> None:
        """`reply_label` (e.g. 回复…) adds the free-text reply; `actions` are (action, label) pairs."""
        super().__init__(parent)
        self.setObjectName("answerBar")
        self._busy = False
        self.buttons: list[QPushButton] = []
        row = QHBoxLayout()
        row.setContentsMargins(0, 4, 0, 0)
        row.setSpacing(6)
        for option in options:
            row.addWidget(self._button(option, lambda _c=False, o=option: self._answer(o)))
        self.reply_button: QPushButton | None = None
        if reply_label is not None:
            self.reply_button = self._button(reply_label, self._open_reply, "quiet")
            row.addWidget(self.reply_button)
        for action, label in actions:
            row.addWidget(self._button(label, lambda _c=False, a=action: self._act(a)))
        row.addStretch(1)
        self._build_reply()
        self.error = WrappedLabel("", self)
        self.error.setObjectName("attentionError")
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setProperty("role", "danger")
        self.error.setFont(theme.font("small"))
        self.error.hide()

        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(3)
        if self.buttons:
            column.addLayout(row)
        column.addWidget(self.reply_box)
        column.addWidget(self.error)

    # -- what the owner drives -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._busy

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        for button in [*self.buttons, self.send_button]:
            button.setEnabled(not busy)
        self.reply_input.setEnabled(not busy)
        if busy:
            self.error.hide()

    def show_error(self, text: str) -> None:
        self.set_busy(False)
        self.error.setText(text)
        self.error.show()

    def done(self) -> None:
        """The action went through: the typed reply is spent (the bar stays off until its owner re-reads)."""
        self.reply_input.clear()
        self.reply_box.hide()

    def button_texts(self) -> list[str]:
        """The action buttons as shown, left to right (tests read this, people see it)."""
        return [button.text() for button in self.buttons if not button.isHidden()]

    def button(self, text: str) -> QPushButton:
        for candidate in [*self.buttons, self.send_button]:
            if candidate.text() == text:
                return candidate
        raise KeyError(text)

    # -- building --------------------------------------------------------------------------------------

    def _build_reply(self) -> None:
        """The one-line reply box 回复… opens: Enter (or 发送) sends, Esc closes."""
        self.reply_box = QWidget(self)
        self.reply_input = QLineEdit(self.reply_box)
        self.reply_input.setObjectName("attentionReply")
        self.reply_input.setPlaceholderText(t("needs.reply_placeholder"))
        self.reply_input.setMaximumWidth(REPLY_MAX_WIDTH)
        self.reply_input.returnPressed.connect(self._send_reply)
        bind_escape(self.reply_input, self._close_reply, WIDGET)
        self.send_button = self._button(t("needs.send"), self._send_reply, "send", keep=False)
        self.send_button.setParent(self.reply_box)
        reply_row = QHBoxLayout(self.reply_box)
        reply_row.setContentsMargins(0, 4, 0, 0)
        reply_row.setSpacing(6)
        reply_row.addWidget(self.reply_input, 1)
        reply_row.addWidget(self.send_button)
        reply_row.addStretch(1)
        self.reply_box.hide()

    def _button(self, text: str, slot: Callable[..., None], kind: str = "", keep: bool = True) -> QPushButton:
        button = QPushButton(text, self)
        button.setObjectName("attentionAction")
        if kind:
            button.setProperty("kind", kind)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setFont(theme.font("small"))
        button.clicked.connect(slot)
        if keep:
            self.buttons.append(button)
        return button

    # -- asking ----------------------------------------------------------------------------------------

    def _answer(self, text: str) -> None:
        if not self._busy and text.strip():
            self.answered.emit(text.strip())

    def _act(self, action: str) -> None:
        if not self._busy:
            self.actionRequested.emit(action)

    def _open_reply(self) -> None:
        self.reply_box.setVisible(self.reply_box.isHidden())
        if not self.reply_box.isHidden():
            self.reply_input.setFocus()

    def _close_reply(self) -> None:
        self.reply_box.hide()
        if self.reply_button is not None:
            self.reply_button.setFocus()

    def _send_reply(self) -> None:
        self._answer(self.reply_input.text())
