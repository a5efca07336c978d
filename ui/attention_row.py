"""One needs-you row, self-contained with its actions inline (P3 §6 mock-up):

    ● GPU 价格调研 · 等你回答                                  2 分钟前
      比较包月价还是按小时价?
      不回复就按包月价做
      [包月价] [按小时价] [回复…]

The dot is amber for what waits on a person and red for a failure. An answer with options gets one button
per option; a question that also takes free text gets 回复…, which opens a one-line box (Enter sends).
The row only asks: the page runs the action, and while it runs the row's controls are off. A refusal is
said under the row and the controls come back; on success the list re-reads and the row goes by itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.attention.items import TEXT, AttentionAction, AttentionItem, action_label, lang_of
from ui import formatting, theme
from ui.elided_text import ElidedText
from ui.i18n import language, t
from ui.message_widgets import SELECTABLE, WrappedLabel
from ui.status_dot import StatusDot
from ui.theme import DotState

MINUTE = 60
HOUR = 3600
# Within this, a row says how long ago (「2 小时前」); older causes say when (14:02, 昨天, 10月3日).
RELATIVE_FOR_S = 6 * HOUR
# A one-line answer needs no more; wider, the box reads as a second composer.
REPLY_MAX_WIDTH = 460
# Kinds whose answer is one of the options only (core.attention.items: budget, observe).
OPTIONS_ONLY = ("task_budget", "observe_ready")


def ago(since: float, now: float) -> str:
    """「刚刚」「2 分钟前」「3 小时前」, then the time or day."""
    delta = max(0.0, now - since)
    if delta < MINUTE:
        return t("needs.ago.now")
    if delta < HOUR:
        return t("needs.ago.minutes", n=int(delta // MINUTE))
    if delta < RELATIVE_FOR_S:
        return t("needs.ago.hours", n=int(delta // HOUR))
    return formatting.when(since)


def row_dot(item: AttentionItem) -> DotState:
    if item.severity == "error":
        return "failed"
    return "needs" if item.severity == "warn" else "idle"


def default_line(item: AttentionItem) -> str:
    """「不回复就按包月价做」 for a question with a default, else ''."""
    if item.default is None:
        return ""
    return t("needs.default", default=item.default)


def body_line(item: AttentionItem) -> str:
    """The item's line without the default sentence the core may already have put on it (the row shows
    that sentence on its own line, so it never appears twice)."""
    text = item.line.strip()
    if item.default is None:
        return text
    said = {TEXT[lang]["question_default"].format(default=item.default) for lang in ("zh", "en")}
    said.add(default_line(item))
    kept = [line for line in text.splitlines() if line.strip() not in said]
    return "\n".join(kept).strip()


def takes_free_text(item: AttentionItem) -> bool:
    return "answer" in item.actions and item.kind not in OPTIONS_ONLY


class AttentionRow(QWidget):
    """Emits `actRequested(item_id, action, answer)` (answer is '' unless action is 'answer') and
    `openRequested(task_id, conversation_id)`."""

    actRequested = Signal(str, str, str)
    openRequested = Signal(str, str)

    def __init__(
        self, item: AttentionItem, parent: QWidget | None = None, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__(parent)
        self.setObjectName("attentionRow")
        self.item = item
        self._now = now
        self._busy = False
        lang = lang_of(language())

        self.dot = StatusDot(row_dot(item), 8, self)
        self.subject = ElidedText(item.subject, 1, self)
        self.subject.setObjectName("attentionSubject")
        self.subject.setFont(theme.font("strong"))
        self.when = QLabel(self)
        self.when.setObjectName("attentionWhen")
        self.when.setProperty("role", "faint")
        self.when.setFont(theme.font("small"))
        self.line = self._text(body_line(item), "attentionLine")
        self.line.setTextInteractionFlags(SELECTABLE)
        self.default = self._text(default_line(item), "attentionDefault", "muted")
        actions = self._build_actions(item, lang)
        self._build_reply()
        self.error = self._text("", "attentionError", "danger")

        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(8)
        head.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(self.subject, 1)
        head.addWidget(self.when, 0, Qt.AlignmentFlag.AlignVCenter)
        under = QVBoxLayout()
        under.setContentsMargins(self.dot.sizeHint().width() + 8, 0, 0, 0)
        under.setSpacing(3)
        under.addWidget(self.line)
        under.addWidget(self.default)
        if self.buttons:
            under.addLayout(actions)
        under.addWidget(self.reply_box)
        under.addWidget(self.error)
        column = QVBoxLayout(self)
        column.setContentsMargins(14, 12, 14, 12)
        column.setSpacing(3)
        column.addLayout(head)
        column.addLayout(under)
        self.setAccessibleName(item.subject)
        self._tint()
        self.tick()

    # -- what the page drives --------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._busy

    def tick(self) -> None:
        """Bring the relative time up to date."""
        self.when.setText(ago(self.item.since, self._now()))

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
        """The action went through: the row stays quiet until the list re-reads (then it is gone, or back)."""
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

    def _text(self, text: str, name: str, role: str = "") -> WrappedLabel:
        """A wrapped plain-text line under the subject, hidden while empty; with a role, small and tinted."""
        label = WrappedLabel(text, self)
        label.setObjectName(name)
        label.setTextFormat(Qt.TextFormat.PlainText)
        if role:
            label.setProperty("role", role)
            label.setFont(theme.font("small"))
        label.setVisible(bool(text))
        return label

    def _build_actions(self, item: AttentionItem, lang: str) -> QHBoxLayout:
        """[option] [option] [回复…] [批准一次] [拒绝] [重试] [打开任务]: what it offers, in its order."""
        self.buttons: list[QPushButton] = []
        actions = QHBoxLayout()
        actions.setContentsMargins(0, 4, 0, 0)
        actions.setSpacing(6)
        if "answer" in item.actions:
            for option in item.options:
                actions.addWidget(self._button(option, lambda _c=False, o=option: self._answer(o)))
        self.reply_button: QPushButton | None = None
        if takes_free_text(item):
            self.reply_button = self._button(action_label(item, "answer", lang), self._open_reply, "quiet")
            actions.addWidget(self.reply_button)
        for action in item.actions:
            if action != "answer":
                label = action_label(item, action, lang)
                actions.addWidget(self._button(label, lambda _c=False, a=action: self._act(a)))
        actions.addStretch(1)
        return actions

    def _build_reply(self) -> None:
        """The one-line reply box 回复… opens: Enter (or 发送) sends, Esc closes."""
        self.reply_box = QWidget(self)
        self.reply_input = QLineEdit(self.reply_box)
        self.reply_input.setObjectName("attentionReply")
        self.reply_input.setPlaceholderText(t("needs.reply_placeholder"))
        self.reply_input.setMaximumWidth(REPLY_MAX_WIDTH)
        self.reply_input.returnPressed.connect(self._send_reply)
        QShortcut(
            QKeySequence(Qt.Key.Key_Escape),
            self.reply_input,
            self._close_reply,
            Qt.ShortcutContext.WidgetShortcut,
        )
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

    def _tint(self) -> None:
        self.subject.set_color(theme.colors().text)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)

    # -- asking ----------------------------------------------------------------------------------------

    def _answer(self, text: str) -> None:
        if not self._busy and text.strip():
            self.actRequested.emit(self.item.id, "answer", text.strip())

    def _act(self, action: AttentionAction) -> None:
        if self._busy:
            return
        if action == "open":
            self.openRequested.emit(self.item.task_id, self.item.conversation_id)
            return
        self.actRequested.emit(self.item.id, action, "")

    def _open_reply(self) -> None:
        self.reply_box.setVisible(not self.reply_box.isVisible())
        if self.reply_box.isVisible():
            self.reply_input.setFocus()

    def _close_reply(self) -> None:
        self.reply_box.hide()
        if self.reply_button is not None:
            self.reply_button.setFocus()

    def _send_reply(self) -> None:
        self._answer(self.reply_input.text())
