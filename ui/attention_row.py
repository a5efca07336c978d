"""One needs-you row, self-contained with its actions inline (docs/desktop.md#needs-you-view):

    ● GPU 价格调研 · 等你回答                                  2 分钟前
      比较包月价还是按小时价?
      不回复就按包月价做
      [包月价] [按小时价] [回复…]

The dot is amber for what waits on a person and red for a failure. An answer with options gets one button
per option; a question that also takes free text gets 回复…, which opens a one-line box (Enter sends).
The row only asks: the page runs the action, and while it runs the row's controls are off. A refusal is
said under the row and the controls come back; on success the list re-reads and the row goes by itself.
The buttons, the reply box and the refusal are `ui.answer_bar.AnswerBar`, which the question card in the
conversation shows too.

A task stopped at its budget (docs/cost.md#the-budget-question) reads 「GPU 价格调研 · 预算用完」 over
「已用 约 $1.00 / $1.00。继续还是停止?」, with [继续（+$1）] [停止]: the button says what 继续 gives, and
still answers with the option itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.attention.items import AttentionAction, AttentionItem, action_label, lang_of
from core.translations import LANGUAGES
from core.translations import text as words
from ui import formatting, theme
from ui.answer_bar import AnswerBar
from ui.elided_text import ElidedText
from ui.i18n import language, t
from ui.status_dot import StatusDot
from ui.theme import DotState
from ui.wrapped_label import SELECTABLE, WrappedLabel

MINUTE = 60
HOUR = 3600
# Within this, a row says how long ago (「2 小时前」); older causes say when (14:02, 昨天, 10月3日).
RELATIVE_FOR_S = 6 * HOUR
# Kinds whose answer is one of the options only (core.attention.items: budget, observe).
OPTIONS_ONLY = ("task_budget", "observe_ready")
# A task budget's options: continue (the host adds $1, docs/cost.md#the-budget-question), then stop.
BUDGET_CONTINUE, BUDGET_STOP = 0, 1


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
    said = {words(lang, "attention.question_default", default=item.default) for lang in LANGUAGES}
    said.add(default_line(item))
    kept = [line for line in text.splitlines() if line.strip() not in said]
    return "\n".join(kept).strip()


def takes_free_text(item: AttentionItem) -> bool:
    return "answer" in item.actions and item.kind not in OPTIONS_ONLY


class AttentionRow(QWidget):
    """Emits `actRequested(item_id, action, answer)` (answer is '' unless action is 'answer'),
    `openRequested(task_id, conversation_id)`, `botOpenRequested(kind, bot_id)` for an item about the bot
    itself (「记忆已满」 opens its memory, the reserve its settings), and for an expired channel login
    `loginRequested(item_id)` (its 重新扫码: the page asks the item where to scan again)."""

    actRequested = Signal(str, str, str)
    openRequested = Signal(str, str)
    botOpenRequested = Signal(str, str)
    loginRequested = Signal(str)

    def __init__(
        self, item: AttentionItem, parent: QWidget | None = None, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__(parent)
        self.setObjectName("attentionRow")
        self.item = item
        self._now = now
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
        self.bar = self._build_bar(item, lang)
        # The bar's parts, by the names the page and its tests have always used.
        self.buttons: list[QPushButton] = self.bar.buttons
        self.reply_button: QPushButton | None = self.bar.reply_button
        self.reply_box: QWidget = self.bar.reply_box
        self.reply_input: QLineEdit = self.bar.reply_input
        self.send_button: QPushButton = self.bar.send_button
        self.error: WrappedLabel = self.bar.error

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
        under.addWidget(self.bar)
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
        return self.bar.busy

    def tick(self) -> None:
        """Bring the relative time up to date."""
        self.when.setText(ago(self.item.since, self._now()))

    def set_busy(self, busy: bool) -> None:
        self.bar.set_busy(busy)

    def show_error(self, text: str) -> None:
        self.bar.show_error(text)

    def done(self) -> None:
        """The action went through: the row stays quiet until the list re-reads (then it is gone, or back)."""
        self.bar.done()

    def button_texts(self) -> list[str]:
        """The action buttons as shown, left to right (tests read this, people see it)."""
        return self.bar.button_texts()

    def button(self, text: str) -> QPushButton:
        return self.bar.button(text)

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

    def _build_bar(self, item: AttentionItem, lang: str) -> AnswerBar:
        """[option] [option] [回复…] [批准一次] [拒绝] [重试] [打开任务]: what it offers, in its order."""
        options = item.options if "answer" in item.actions else ()
        reply = action_label(item, "answer", lang) if takes_free_text(item) else None
        others = [(a, self._action_text(item, a, lang)) for a in item.actions if a != "answer"]
        bar = AnswerBar(options, reply, others, self)
        if item.kind == "task_budget" and len(options) == len(bar.buttons) >= 2:
            more = bar.buttons[BUDGET_CONTINUE]
            more.setText(t("cost.continue_more", option=options[BUDGET_CONTINUE]))
            more.setToolTip(t("cost.continue_tip"))
            bar.buttons[BUDGET_STOP].setToolTip(t("cost.stop_tip"))
        bar.answered.connect(lambda text: self.actRequested.emit(self.item.id, "answer", text))
        bar.actionRequested.connect(self._act)
        return bar

    @staticmethod
    def _action_text(item: AttentionItem, action: AttentionAction, lang: str) -> str:
        if item.kind == "channel_login" and action == "open":
            # On the desktop, signing WeChat in again is scanning a new code, and the button says so.
            return t("channels.scan_again")
        if item.kind == "reserve_low" and action == "open":
            return t("needs.open_settings")  # the balance and its reserve are in the bot's settings
        return action_label(item, action, lang)

    def _tint(self) -> None:
        self.subject.set_color(theme.colors().text)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)

    # -- asking ----------------------------------------------------------------------------------------

    def _act(self, action: str) -> None:
        if action == "open" and self.item.kind == "channel_login":
            self.loginRequested.emit(self.item.id)
            return
        if action == "open" and not (self.item.task_id or self.item.conversation_id) and self.item.bot_id:
            self.botOpenRequested.emit(self.item.kind, self.item.bot_id)
            return
        if action == "open":
            self.openRequested.emit(self.item.task_id, self.item.conversation_id)
            return
        self.actRequested.emit(self.item.id, action, "")
