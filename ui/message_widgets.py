"""One widget per stored message: the user's bubble on the right, replies on the left as Markdown with their
folded steps and the chips of the tasks they started, errors as a red-dotted well that says what to fix,
notices small and grey. A background task's result or failure says so in a grey caption above it. A task's
question or approval carries its card under the text (`ui.question_card`), which follows its status. Every
message shows when it was said on hover, and a right-click offers 复制 (and what else applies)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics, QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.chat.views import MessageView, RuleChip, TaskChip
from ui import attachment_words, markdown, theme
from ui.activity_view import ActivityView
from ui.i18n import t
from ui.question_card import QuestionCardWidget, question_text, same_ask
from ui.reply_retry import retry_button, set_retrying
from ui.rule_origin import RuleChipRow, RuleOriginLink
from ui.status_dot import StatusDot
from ui.task_chip import TaskChipRow
from ui.wrapped_label import SELECTABLE, WrappedLabel

# User bubbles never span the whole column: the left gap keeps "who said it" readable at a glance.
BUBBLE_INDENT = 72


class BubbleLabel(WrappedLabel):
    """Plain wrapped text that asks for its natural width, so short lines make short bubbles."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setTextInteractionFlags(SELECTABLE)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def sizeHint(self) -> QSize:
        fm = QFontMetrics(self.font())
        margins = self.contentsMargins()
        natural = max((fm.horizontalAdvance(line) for line in self.text().splitlines()), default=0)
        width = min(natural + 2 + margins.left() + margins.right(), self.maximumWidth())
        return QSize(width, self.heightForWidth(width))


class MarkdownLabel(WrappedLabel):
    """A reply rendered from Markdown: selectable, wrapping, links open in the browser."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setProperty("role", "reply")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setOpenExternalLinks(True)
        self.setTextInteractionFlags(SELECTABLE | Qt.TextInteractionFlag.LinksAccessibleByMouse)
        # A long URL or code line must not widen the whole chat column; it wraps or clips instead.
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self._markdown: str | None = None
        self._plain = ""
        self.set_markdown(text)

    def markdown(self) -> str:
        return self._markdown or ""

    def plain_text(self) -> str:
        """The text as a reader sees it, without Markdown marks."""
        return self._plain

    def set_markdown(self, text: str) -> None:
        if text == self._markdown:
            return
        self._markdown = text
        self._render()

    def _render(self) -> None:
        html, self._plain = markdown.to_html(self._markdown or "", self.font(), theme.colors())
        self.setText(html)

    def changeEvent(self, event: QEvent) -> None:
        # The HTML carries colours and the font size; a scheme or font change needs a fresh render.
        super().changeEvent(event)
        if event.type() in (QEvent.Type.StyleChange, QEvent.Type.FontChange) and self._markdown is not None:
            self._render()


def _caption(text: str, parent: QWidget, align: Qt.AlignmentFlag = Qt.AlignmentFlag.AlignLeft) -> QLabel:
    label = WrappedLabel(text, parent)
    label.setProperty("role", "faint")
    label.setFont(theme.font("caption"))
    label.setAlignment(align)
    return label


def _task_caption(view: MessageView, parent: QWidget) -> QLabel | None:
    """「来自后台任务」 over a message a background task sent; None for everything else."""
    if not view.task_id:
        return None
    label = _caption(t("message.from_task"), parent)
    label.setObjectName("fromTaskCaption")
    return label


def _rule_caption(view: MessageView, parent: MessageWidget) -> RuleOriginLink | None:
    """「来自规则「…」」 over a message a rule's run sent, opening the rule; None for everything else."""
    if not view.rule_id:
        return None
    link = RuleOriginLink(view, parent)
    link.opened.connect(parent.ruleOpened)
    return link


class MessageWidget(QWidget):
    # A task chip was clicked: open that task.
    taskOpened = Signal(str)
    # 「来自规则「…」」, a rule chip or 打开规则 was clicked: open that rule.
    ruleOpened = Signal(str)
    # The question card asks to answer: (needs-you item id, answer | approve | deny, the answer or '').
    answerRequested = Signal(str, str, str)
    # 重试 on the latest failed reply (ui.reply_retry): the failed message's id.
    retryRequested = Signal(int)

    text_label: QLabel
    card: QuestionCardWidget | None = None
    rule_caption: RuleOriginLink | None = None  # 「来自规则「…」」 over a rule's message

    def __init__(self, view: MessageView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view

    def follow(self, view: MessageView) -> bool:
        """Take a newer read of the same message in place, if only what can change in place changed."""
        return view == self.view

    def offer_menu(self) -> None:
        """Right-click anywhere on the message (its text too, which would otherwise show Qt's own menu)
        offers what applies to it; hovering shows when it was said."""
        self.setToolTip(said_at(self.view.created_at))
        for widget in (self, self.text_label):
            widget.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            widget.customContextMenuRequested.connect(
                lambda pos, w=widget: self.menu().popup(w.mapToGlobal(pos))
            )

    def menu(self) -> QMenu:
        """The message's menu, with only the entries that apply: 复制所选 while part of it is selected,
        复制, and 打开任务 for a background task's message."""
        menu = QMenu(self)
        menu.setObjectName("messageMenu")
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        selected = self.text_label.selectedText()
        if selected:
            menu.addAction(t("message.copy_selection"), lambda: copy_text(selected))
        menu.addAction(t("message.copy"), lambda: copy_text(self.copy_text()))
        if self.view.task_id:
            menu.addAction(t("message.open_task"), lambda: self.taskOpened.emit(self.view.task_id))
        if self.view.rule_id and self.view.rule_title:  # a deleted rule has nothing to open
            menu.addAction(t("message.open_rule"), lambda: self.ruleOpened.emit(self.view.rule_id))
        if self.view.retryable:
            menu.addAction(t("message.retry"), self.request_retry)
        return menu

    def request_retry(self) -> None:
        self.retryRequested.emit(self.view.id)

    def copy_text(self) -> str:
        """What 复制 puts on the clipboard: the message as written (a reply's Markdown source)."""
        return self.view.text


def copy_text(text: str) -> None:
    QGuiApplication.clipboard().setText(text)


def said_at(ts: float) -> str:
    """When a message was said, on this computer's clock: 2026-12-03 14:05."""
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


class UserMessage(MessageWidget):
    def __init__(self, view: MessageView, parent: QWidget | None = None) -> None:
        super().__init__(view, parent)
        self.setObjectName("userMessage")
        self.bubble = QFrame(self)
        self.bubble.setObjectName("userBubble")
        self.text_label = BubbleLabel(attachment_words.shown(view.text), self.bubble)
        self.text_label.setObjectName("messageText")
        inner = QVBoxLayout(self.bubble)
        inner.setContentsMargins(14, 9, 14, 9)
        inner.addWidget(self.text_label)

        row = QHBoxLayout()
        row.setContentsMargins(BUBBLE_INDENT, 0, 0, 0)
        row.addStretch(1)
        row.addWidget(self.bubble)

        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(3)
        column.addLayout(row)
        if view.state == "queued":
            column.addWidget(_caption(t("message.queued"), self, Qt.AlignmentFlag.AlignRight))


class AssistantMessage(MessageWidget):
    def __init__(self, view: MessageView, parent: QWidget | None = None, answerable: bool = True) -> None:
        super().__init__(view, parent)
        self.setObjectName("assistantMessage")
        text = question_text(view.text, view.question) if view.question is not None else view.text
        self.text_label = MarkdownLabel(text, self)
        self.text_label.setObjectName("messageText")
        self.text_label.setVisible(bool(text.strip()))
        if view.question is not None:
            self.card = QuestionCardWidget(view.question, answerable, self)
            self.card.answerRequested.connect(self.answerRequested)
        self.activity = ActivityView(live=False, parent=self)
        self.activity.set_activity(view.steps, view.duration_ms)
        self.chips: list[TaskChipRow] = []

        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(4)
        caption = _task_caption(view, self)
        if caption is not None:
            column.addWidget(caption)
        self.rule_caption = _rule_caption(view, self)
        if self.rule_caption is not None:
            column.addWidget(self.rule_caption, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(self.text_label)
        if self.card is not None:
            column.addWidget(self.card)
        self._chip_box = QVBoxLayout()
        self._chip_box.setContentsMargins(0, 2, 0, 2)
        self._chip_box.setSpacing(4)
        column.addLayout(self._chip_box)
        # The rules this reply created; a changed rule re-reads the message, which is then built anew.
        self.rule_chips = [self._rule_chip(chip) for chip in view.rule_chips]
        for rule_chip in self.rule_chips:
            column.addWidget(rule_chip, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(self.activity)
        if view.state == "cancelled":
            column.addWidget(_caption(t("message.cancelled"), self))
        self._set_chips(view.task_chips)

    def follow(self, view: MessageView) -> bool:
        # A chip follows its task's stage and a card its question's status: only those change, so the
        # rendered text and steps stay (and a half-typed reply in an open card too).
        if replace(view, task_chips=self.view.task_chips, question=self.view.question) != self.view:
            return False
        if not same_ask(view.question, self.view.question):
            return False
        self.view = view
        self._set_chips(view.task_chips)
        if self.card is not None and view.question is not None:
            self.card.set_card(view.question)
        return True

    def _rule_chip(self, chip: RuleChip) -> RuleChipRow:
        row = RuleChipRow(chip, self)
        row.opened.connect(self.ruleOpened)
        return row

    def _set_chips(self, chips: tuple[TaskChip, ...]) -> None:
        for position, chip in enumerate(chips):
            if position < len(self.chips):
                self.chips[position].set_chip(chip)
                continue
            row = TaskChipRow(chip, self)
            row.opened.connect(self.taskOpened)
            # Left-aligned: the chip hugs its words instead of spanning the column.
            self._chip_box.addWidget(row, 0, Qt.AlignmentFlag.AlignLeft)
            self.chips.append(row)
        while len(self.chips) > len(chips):
            gone = self.chips.pop()
            self._chip_box.removeWidget(gone)
            gone.hide()
            gone.deleteLater()


class ErrorMessage(MessageWidget):
    def __init__(self, view: MessageView, parent: QWidget | None = None) -> None:
        super().__init__(view, parent)
        self.setObjectName("errorMessage")
        well = QFrame(self)
        well.setObjectName("errorWell")
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(4)
        head.addWidget(StatusDot("failed", 7, well))
        label = QLabel(t("message.error_label"), well)
        label.setObjectName("errorTitle")
        label.setFont(theme.font("strong"))
        head.addWidget(label)
        head.addStretch(1)
        self.retry_button: QPushButton | None = None
        if view.retryable:
            self.retry_button = retry_button(well)
            self.retry_button.clicked.connect(self.request_retry)
            head.addWidget(self.retry_button)
        self.retry_error = _caption("", well)
        self.retry_error.setProperty("role", "danger")
        self.retry_error.hide()
        self.text_label = WrappedLabel(view.text, well)
        self.text_label.setObjectName("messageText")
        self.text_label.setTextFormat(Qt.TextFormat.PlainText)
        self.text_label.setTextInteractionFlags(SELECTABLE)
        inner = QVBoxLayout(well)
        inner.setContentsMargins(12, 9, 12, 10)
        inner.setSpacing(4)
        inner.addLayout(head)
        inner.addWidget(self.text_label)
        inner.addWidget(self.retry_error)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(4)
        caption = _task_caption(view, self)
        if caption is not None:
            column.addWidget(caption)
        self.rule_caption = _rule_caption(view, self)
        if self.rule_caption is not None:
            column.addWidget(self.rule_caption, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(well)

    def request_retry(self) -> None:
        if self.retry_button is not None:
            if not self.retry_button.isEnabled():
                return  # one retry at a time; the view reads the conversation again when it went
            set_retrying(self.retry_button, True)
        self.retry_error.hide()
        super().request_retry()

    def retry_refused(self, reason: str) -> None:
        """The retry did not go: say why under the error, and offer the button again."""
        if self.retry_button is not None:
            set_retrying(self.retry_button, False)
        self.retry_error.setText(t("message.retry_failed", reason=reason))
        self.retry_error.show()


class NoticeMessage(MessageWidget):
    def __init__(self, view: MessageView, parent: QWidget | None = None) -> None:
        super().__init__(view, parent)
        self.setObjectName("noticeMessage")
        self.text_label = _caption(view.text, self, Qt.AlignmentFlag.AlignHCenter)
        self.text_label.setObjectName("messageText")
        column = QVBoxLayout(self)
        column.setContentsMargins(24, 0, 24, 0)
        column.addWidget(self.text_label)


def message_widget(
    view: MessageView, parent: QWidget | None = None, answerable: bool = True
) -> MessageWidget:
    """`answerable`: a question card offers its buttons (the view can run them); else it only reads."""
    made: MessageWidget
    if view.role == "user":
        made = UserMessage(view, parent)
    elif view.role == "assistant":
        made = AssistantMessage(view, parent, answerable)
    elif view.role == "error":
        made = ErrorMessage(view, parent)
    else:
        made = NoticeMessage(view, parent)
    made.offer_menu()
    return made
