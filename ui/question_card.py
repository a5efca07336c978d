"""The card under a task's question (or an approval) in the conversation: the same answering parts as its
needs-you row (docs/attention.md#questions: "the same card in the conversation and in needs you"), from
`ui.answer_bar`.

    「GPU 价格调研」想问你:比较包月价还是按小时价?        the message's own text
    ┌──────────────────────────────────────────┐
    │ 不回复就按包月价做                         │  only for a question with a default
    │ [包月价] [按小时价] [回复…]                │  an approval: [批准一次] [拒绝]
    └──────────────────────────────────────────┘

Once it is no longer open, the buttons give way to one quiet grey line: 你回答了:包月价, 已按包月价处理,
已撤回, 已过期, 已批准, 已拒绝. The card only asks (`answerRequested(item_id, action, answer)`); the chat
view runs it through the AttentionFacade, with the same needs-you item id, and the card follows the
stored status when the conversation is read again.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QVBoxLayout, QWidget

from core.attention.items import item_id, lang_of
from core.chat.views import QuestionCard
from core.tasks.language import Language, pushed
from core.translations import text
from ui import theme
from ui.answer_bar import AnswerBar
from ui.i18n import language, t
from ui.wrapped_label import WrappedLabel

_LANGUAGES: tuple[Language, ...] = ("zh", "en")
# The card hugs its buttons; opened, the reply box needs room for a sentence.
REPLY_MIN_WIDTH = 300


def card_item_id(card: QuestionCard) -> str:
    """The needs-you item this card answers: question:<id> or approval:<id>."""
    return item_id("approval" if card.kind == "approval" else "question", card.question_id)


def same_ask(a: QuestionCard | None, b: QuestionCard | None) -> bool:
    """The same question, asked the same way: only its status and answer may differ."""
    if a is None or b is None:
        return a is b
    return (a.question_id, a.kind, a.options, a.default) == (b.question_id, b.kind, b.options, b.default)


def question_text(text: str, card: QuestionCard) -> str:
    """The pushed text without the lines the card says itself: 「可选:包月价 / 按小时价」 (the buttons) and
    「不回复就按包月价做」 (the card's own line). Only the exact lines the host wrote are taken out."""
    said: set[str] = set()
    for lang in _LANGUAGES:
        if card.options:
            said.add(pushed(lang, "options", options=" / ".join(card.options)))
        if card.default is not None:
            said.add(pushed(lang, "default", default=card.default))
    if not said:
        return text
    return "\n".join(line for line in text.splitlines() if line.strip() not in said).strip()


def closed_line(card: QuestionCard) -> str:
    """What a card that no longer asks says instead of its buttons; '' while it is open."""
    if card.status == "answered":
        if card.kind == "approval":
            return t("question.denied") if card.answer == "denied" else t("question.approved")
        return t("question.answered", answer=card.answer)
    if card.status == "withdrawn":
        if card.default is not None and card.kind != "approval":
            return t("question.went_with_default", default=card.default)
        return t("question.withdrawn")
    if card.status == "expired":
        return t("question.expired")
    return ""


class QuestionCardWidget(QWidget):
    """Emits `answerRequested(item_id, action, answer)`: action is answer (with the option or the typed
    reply), approve or deny (answer '')."""

    answerRequested = Signal(str, str, str)

    def __init__(self, card: QuestionCard, answerable: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("questionCard")
        self.card = card
        self.item_id = card_item_id(card)
        lang = lang_of(language())

        self.well = QFrame(self)
        self.well.setObjectName("questionWell")
        self.default = WrappedLabel(t("needs.default", default=card.default or ""), self.well)
        self.default.setObjectName("questionDefault")
        self.default.setTextFormat(Qt.TextFormat.PlainText)
        self.default.setProperty("role", "muted")
        self.default.setFont(theme.font("small"))
        self.default.setVisible(card.default is not None and card.kind != "approval")
        if card.kind == "approval":
            approve, deny = text(lang, "attention.action.approve"), text(lang, "attention.action.deny")
            self.bar = AnswerBar(actions=[("approve", approve), ("deny", deny)])
        else:
            self.bar = AnswerBar(card.options, text(lang, "attention.action.answer"))
        self.bar.setParent(self.well)
        self.bar.answered.connect(lambda text: self.answerRequested.emit(self.item_id, "answer", text))
        self.bar.actionRequested.connect(lambda action: self.answerRequested.emit(self.item_id, action, ""))
        self.bar.setVisible(answerable)
        self.bar.reply_input.setMinimumWidth(REPLY_MIN_WIDTH)
        # A refusal is said under the card, at the column's width, not squeezed into the hugging well.
        bar_layout = self.bar.layout()
        if bar_layout is not None:
            bar_layout.removeWidget(self.bar.error)
        inner = QVBoxLayout(self.well)
        inner.setContentsMargins(12, 8, 12, 10)
        inner.setSpacing(2)
        inner.addWidget(self.default)
        inner.addWidget(self.bar)

        self.closed = WrappedLabel("", self)
        self.closed.setObjectName("questionClosed")
        self.closed.setTextFormat(Qt.TextFormat.PlainText)
        self.closed.setProperty("role", "faint")
        self.closed.setFont(theme.font("small"))

        column = QVBoxLayout(self)
        column.setContentsMargins(0, 2, 0, 0)
        column.setSpacing(4)
        # The well hugs its buttons (a card, not a panel across the column); the lines wrap at full width.
        column.addWidget(self.well, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(self.bar.error)
        column.addWidget(self.closed)
        self.set_card(card)

    @property
    def is_open(self) -> bool:
        return self.card.status == "open"

    @property
    def busy(self) -> bool:
        return self.bar.busy

    def set_card(self, card: QuestionCard) -> None:
        """Follow a newer read of the same ask: open shows the buttons, anything else its grey line."""
        self.card = card
        self.well.setVisible(self.is_open and (not self.bar.isHidden() or not self.default.isHidden()))
        line = closed_line(card)
        self.closed.setText(line)
        self.closed.setVisible(bool(line))
        if not self.is_open:
            self.bar.set_busy(False)

    def set_busy(self, busy: bool) -> None:
        self.bar.set_busy(busy)

    def show_error(self, text: str) -> None:
        self.bar.show_error(text)

    def done(self) -> None:
        self.bar.done()

    def button_texts(self) -> list[str]:
        """The buttons a person sees now (none once the card no longer asks)."""
        return self.bar.button_texts() if self.is_open and not self.bar.isHidden() else []

    def closed_text(self) -> str:
        """The grey line a person reads once the card no longer asks; '' while it is open."""
        return self.closed.text() if not self.closed.isHidden() else ""
