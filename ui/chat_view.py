"""One conversation: its messages top to bottom, the reply streaming now, and the composer (or, for a
conversation from another channel, the quiet 「在微信里回复」 in its place).

It reads through the ChatFacade only. Reads run on the loop (never blocking a slot); a read that comes back
for a conversation that is no longer shown is dropped. Stored messages are matched to their widgets by id,
so an unchanged message keeps its widget, its selection and its unfolded steps across re-reads. A reply's
task chips follow their tasks: a change to a task with a chip here re-reads the conversation.

A task's question or approval carries its card (`ui.question_card`). The view answers it through the
AttentionFacade with the needs-you item's id, without waiting: the card is off while the answer runs and
says why under it when it was refused. Answered here, in needs-you or over the API, the task changes, the
conversation is read again and the card shows its grey line instead of the buttons.

`show_message` brings one message into view (a search hit opened it): scrolled to a third of the way down
and briefly tinted, once the conversation's read shows it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from core.attention.facade import AttentionFacade
from core.chat.facade import ChatFacade
from core.chat.views import ConversationView, MessageView
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.channel_rows import kind_name
from ui.composer import Composer
from ui.composer_files import PendingFile, read_all
from ui.conversation_list import display_title
from ui.i18n import t
from ui.live_reply import LiveReplyWidget
from ui.message_widgets import AssistantMessage, MessageWidget, message_widget
from ui.question_card import QuestionCardWidget, card_item_id
from ui.reloader import Reloader
from ui.reply_retry import wire_retry

log = logging.getLogger(__name__)

# Lines longer than this are tiring to read; wide windows centre the column instead.
MAX_COLUMN_WIDTH = 780
MIN_SIDE_MARGIN = 24
MESSAGE_SPACING = 18
# How close to the end still counts as "at the bottom" (a partly visible last line).
STICK_SLACK_PX = 12
# A message a search opened is tinted this long, so the eye finds it, then looks like any other.
FOUND_HIGHLIGHT_MS = 1800
FOUND_PAD_PX = 8


class FoundHighlight(QWidget):
    """A soft accent tint over the message a search opened; mouse events pass through to the message."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("foundHighlight")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.hide()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        fill = QColor(theme.colors().accent)
        fill.setAlpha(30)
        edge = QColor(theme.colors().accent)
        edge.setAlpha(110)
        painter.setPen(edge)
        painter.setBrush(fill)
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 10, 10)
        painter.end()


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


class ChatView(QWidget):
    # A task chip was clicked: the window opens that task.
    taskOpened = Signal(str)
    # 「来自规则「…」」 or a rule chip was clicked: the window opens that rule.
    ruleOpened = Signal(str)

    def __init__(
        self, facade: ChatFacade, parent: QWidget | None = None, attention: AttentionFacade | None = None
    ) -> None:
        """Without `attention`, question cards only read (their buttons are for a view that can answer)."""
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._facade = facade
        self._attention = attention
        self._answering: set[str] = set()  # needs-you item ids whose answer is in flight
        self._conversation: ConversationView | None = None
        self._rows: list[MessageWidget] = []
        self._loaded = False
        self._stick = True
        self._wanted: int | None = None  # a message to bring into view once a read shows it
        self._found: MessageWidget | None = None  # the message shown tinted, while it is
        self._calls = AsyncCalls()
        self._messages: Reloader[tuple[str, list[MessageView]]] = Reloader(
            self._load_messages, self._apply_messages, self._load_failed
        )

        self._build_header()
        self._build_scroll()
        self._build_composer()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self._header)
        layout.addWidget(self._scroll, 1)
        layout.addWidget(self._composer_box)
        self._fit_column(self.width())

    def _build_header(self) -> None:
        self._header = QWidget(self)
        self._header.setObjectName("chatHeader")
        self._header.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.title_label = QLabel(self._header)
        self.title_label.setObjectName("chatTitle")
        self.title_label.setFont(theme.font("title"))
        self.title_label.setTextFormat(Qt.TextFormat.PlainText)
        self.bot_label = QLabel(self._header)
        self.bot_label.setObjectName("chatBot")
        self.bot_label.setProperty("role", "muted")
        self.bot_label.setFont(theme.font("small"))
        self._header_layout = QHBoxLayout(self._header)
        self._header_layout.setSpacing(10)
        self._header_layout.addWidget(self.title_label)
        self._header_layout.addWidget(self.bot_label, 0, Qt.AlignmentFlag.AlignBaseline)
        self._header_layout.addStretch(1)

    def _build_scroll(self) -> None:
        self._scroll = QScrollArea(self)
        self._scroll.setObjectName("messageScroll")
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._column = QWidget()
        self._column.setObjectName("messageColumn")
        self._column.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        # Opaque, so Qt scrolls it by moving pixels instead of repainting every visible message.
        self._column.setAutoFillBackground(True)
        self._column_layout = QVBoxLayout(self._column)
        self._column_layout.setSpacing(MESSAGE_SPACING)
        # Stored messages sit in their own box: while a reply streams, only the live bubble changes size,
        # and the box's layout keeps its cached heights instead of measuring every message again.
        self._messages_box = QWidget(self._column)
        self._messages_layout = QVBoxLayout(self._messages_box)
        self._messages_layout.setContentsMargins(0, 0, 0, 0)
        self._messages_layout.setSpacing(MESSAGE_SPACING)
        self._messages_box.hide()

        self.live = LiveReplyWidget(self._column)
        self.live.hide()
        self.hint = QLabel(t("chat.empty_hint"), self._column)
        self.hint.setObjectName("emptyHint")
        self.hint.setProperty("role", "faint")
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.hint.hide()
        self._column_layout.addWidget(self._messages_box)
        self._column_layout.addWidget(self.live)
        # While shown, the hint takes all spare height and centres itself in it; hidden, the spacer
        # below keeps the messages at the top.
        self._column_layout.addWidget(self.hint, 1)
        self._column_layout.addStretch(0)
        self._scroll.setWidget(self._column)
        self.found_highlight = FoundHighlight(self._column)
        self._found_timer = QTimer(self)
        self._found_timer.setSingleShot(True)
        self._found_timer.setInterval(FOUND_HIGHLIGHT_MS)
        self._found_timer.timeout.connect(self._unhighlight)

        bar = self._scroll.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    def _build_composer(self) -> None:
        self.composer = Composer(self)
        self.composer.submitted.connect(self._on_submitted)
        self.composer.stopRequested.connect(self._on_stop)
        self._composer_box = QWidget(self)
        self._composer_box.setObjectName("composerBox")
        self._composer_box.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._composer_layout = QVBoxLayout(self._composer_box)
        self._composer_layout.addWidget(self.composer)
        # A conversation whose person writes from another channel is read here and answered there
        # (docs/desktop.md#conversations-from-a-channel): the composer makes way for where to reply.
        self.reply_elsewhere = QLabel(self._composer_box)
        self.reply_elsewhere.setObjectName("replyElsewhere")
        self.reply_elsewhere.setProperty("role", "faint")
        self.reply_elsewhere.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.reply_elsewhere.hide()
        self._composer_layout.addWidget(self.reply_elsewhere)

    # -- what the window drives ------------------------------------------------------------------------

    @property
    def conversation_id(self) -> str | None:
        return self._conversation.id if self._conversation else None

    def message_widgets(self) -> list[MessageWidget]:
        return list(self._rows)

    def show_message(self, message_id: int) -> None:
        """Bring message `message_id` of the shown conversation into view and tint it briefly (a search hit
        opened it). Set the conversation first; this waits for its read when it is still coming."""
        self._wanted = message_id
        if self._loaded and self._reveal_wanted():
            return
        if self.conversation_id is not None:
            self._messages.request()  # it may be newer than what is shown

    def highlighted_message_id(self) -> int | None:
        """The message tinted as found just now, if any."""
        return self._found.view.id if self._found is not None and self.found_highlight.isVisible() else None

    def message_visible(self, message_id: int) -> bool:
        """Whether some of that message is inside the visible part of the scroll area."""
        row = next((r for r in self._rows if r.view.id == message_id), None)
        if row is None or not row.isVisible():
            return False
        top = row.mapTo(self._column, row.rect().topLeft()).y()
        shown_top = self._scroll.verticalScrollBar().value()
        return top < shown_top + self._scroll.viewport().height() and top + row.height() > shown_top

    def set_conversation(self, conversation: ConversationView | None) -> None:
        previous = self.conversation_id
        self._conversation = conversation
        self._show_header()
        self._show_reply_place()
        if conversation is None or conversation.id != previous:
            self._switch()

    async def reload(self) -> None:
        """Re-read the shown conversation and wait until the view shows it."""
        if self.conversation_id is not None:
            await self._messages.request()

    def on_messages_changed(self, conversation_id: str) -> None:
        if conversation_id == self.conversation_id:
            self._messages.request()

    def on_task_changed(self, task_id: str) -> None:
        """A task changed: re-read if a message here is about it (its chip, its result or question, or a
        question card answered elsewhere), so the chip reads the new stage and the card its new status.

        A chip that is not shown yet arrives with its reply (MessagesChanged), so other tasks cost nothing."""
        if self.conversation_id is not None and task_id in self.followed_task_ids():
            self._messages.request()

    def chip_task_ids(self) -> set[str]:
        return {chip.task_id for row in self._rows for chip in row.view.task_chips}

    def followed_task_ids(self) -> set[str]:
        """The ids a TaskChanged may carry for what is shown: chips' and messages' tasks, and for a question
        card its task (a chat's own approval has none: ''), its needs-you item id and its question id."""
        ids = self.chip_task_ids()
        for row in self._rows:
            if row.view.task_id:
                ids.add(row.view.task_id)
            card = row.view.question
            if card is not None:
                ids.update((row.view.task_id, card_item_id(card), card.question_id))
        return ids

    def on_rule_changed(self, rule_id: str) -> None:
        """A rule changed: re-read if a message here names it (its caption's title, a chip's state)."""
        if self.conversation_id is not None and rule_id in self.shown_rule_ids():
            self._messages.request()

    def shown_rule_ids(self) -> set[str]:
        ids = {chip.rule_id for row in self._rows for chip in row.view.rule_chips}
        return ids | {row.view.rule_id for row in self._rows if row.view.rule_id}

    def question_cards(self) -> list[QuestionCardWidget]:
        return [row.card for row in self._rows if row.card is not None]

    def on_live_reply_changed(self, conversation_id: str) -> None:
        if conversation_id != self.conversation_id:
            return
        live = self._facade.live_reply(conversation_id)
        if live is not None:
            self._show_live_reply()
        elif not self.live.isHidden():
            # The reply ended. Keep its bubble until the stored reply is read, so nothing blinks away.
            self._messages.request()

    def focus_composer(self) -> None:
        if not self.read_only:
            self.composer.focus_input()

    @property
    def read_only(self) -> bool:
        """Whether the shown conversation is answered on its own channel, not here."""
        return self._conversation is not None and self._conversation.channel != "desktop"

    def add_header_widget(self, widget: QWidget) -> None:
        """Put a control at the right end of the header (the window's ⓘ for the bot's info panel)."""
        widget.setParent(self._header)
        self._header_layout.addWidget(widget, 0, Qt.AlignmentFlag.AlignVCenter)

    def shutdown(self) -> None:
        self._messages.reset()
        self._calls.cancel_all()
        self._answering.clear()

    # -- reading ---------------------------------------------------------------------------------------

    def _switch(self) -> None:
        self._unhighlight()
        self._messages.reset()
        for row in self._rows:
            self._drop(row)
        self._rows = []
        self._messages_box.hide()
        self._loaded = False
        self._stick = True
        self.live.clear()
        self.composer.set_live(False)
        self.composer.set_error(None)
        self._update_hint()
        if self.conversation_id is not None:
            self._messages.request()

    async def _load_messages(self) -> tuple[str, list[MessageView]]:
        conversation_id = self.conversation_id
        if conversation_id is None:
            return "", []
        return conversation_id, await self._facade.list_messages(conversation_id)

    def _apply_messages(self, result: tuple[str, list[MessageView]]) -> None:
        conversation_id, views = result
        if conversation_id != self.conversation_id:
            return  # read for a conversation that is no longer shown
        self._show_messages(views)
        self._wake_cards()
        self._loaded = True
        self._reveal_wanted()
        if (
            self._messages.stale
            and not self.live.isHidden()
            and self._facade.live_reply(conversation_id) is None
        ):
            # The reply just ended but this read predates its stored message: keep the bubble until the
            # read that follows shows the stored reply, so nothing blinks away in between.
            return
        self._show_live_reply()

    def _load_failed(self, exc: Exception) -> None:
        self.hint.setText(t("chat.load_failed", reason=_reason(exc)))
        self.hint.show()

    def _show_messages(self, views: list[MessageView]) -> None:
        old = {row.view.id: row for row in self._rows}
        rows: list[MessageWidget] = []
        for view in views:
            row = old.pop(view.id, None)
            if row is not None and row.follow(view):
                rows.append(row)
                continue
            # Built unparented: no layout work until inserted.
            replacement = message_widget(view, answerable=self._attention is not None)
            replacement.taskOpened.connect(self.taskOpened)
            replacement.ruleOpened.connect(self.ruleOpened)
            replacement.answerRequested.connect(self._on_answer)
            wire_retry(replacement, self._facade, self._calls, self.on_messages_changed)
            if isinstance(row, AssistantMessage) and isinstance(replacement, AssistantMessage):
                replacement.activity.set_expanded(row.activity.expanded)
            if row is not None:
                self._drop(row)
            rows.append(replacement)
        for gone in old.values():
            self._drop(gone)
        kept = len(self._rows)
        if rows[:kept] == self._rows:
            for row in rows[kept:]:  # the usual case: new messages at the end
                self._messages_layout.addWidget(row)
        elif rows != self._rows:
            for row in self._rows:
                self._messages_layout.removeWidget(row)
            for position, row in enumerate(rows):
                self._messages_layout.insertWidget(position, row)
        self._rows = rows
        self._messages_box.setVisible(bool(rows))

    def _drop(self, row: MessageWidget) -> None:
        if row is self._found:
            self._unhighlight()
        self._messages_layout.removeWidget(row)
        row.hide()
        row.deleteLater()

    def _show_live_reply(self) -> None:
        conversation_id = self.conversation_id
        live = self._facade.live_reply(conversation_id) if conversation_id else None
        if live is None:
            self.live.clear()
        else:
            self.live.show_live(live)
        self.composer.set_live(live is not None)
        self._update_hint()

    def _update_hint(self) -> None:
        self.hint.setText(t("chat.empty_hint"))
        self.hint.setVisible(self._loaded and not self._rows and self.live.isHidden())

    def _show_reply_place(self) -> None:
        conversation = self._conversation
        if self.read_only and conversation is not None:
            self.reply_elsewhere.setText(t("chat.reply_elsewhere", channel=kind_name(conversation.channel)))
        self.composer.setVisible(not self.read_only)
        self.reply_elsewhere.setVisible(self.read_only)

    def _show_header(self) -> None:
        conversation = self._conversation
        self.title_label.setText(display_title(conversation) if conversation else "")
        self.bot_label.setText(conversation.bot_name if conversation else "")
        self.bot_label.setVisible(bool(conversation and conversation.bot_name))

    # -- commands --------------------------------------------------------------------------------------

    def _on_submitted(self, text: str, files: list[PendingFile]) -> None:
        conversation_id = self.conversation_id
        if conversation_id is None or self.read_only:
            self.composer.set_text(text)
            self.composer.set_files(files)
            return
        self._stick = True  # what you just said is what you want to see
        self._calls.start(
            self._say(conversation_id, text, files),
            done=lambda _message: self.on_messages_changed(conversation_id),
            failed=lambda exc: self._say_failed(conversation_id, text, files, exc),
        )

    async def _say(self, conversation_id: str, text: str, files: list[PendingFile]) -> MessageView:
        # Files are read only now, and off the loop thread: a 20 MB file must not hold up the window.
        attachments = await asyncio.to_thread(read_all, files) if files else []
        return await self._facade.say(conversation_id, text, attachments=attachments)

    def _say_failed(self, conversation_id: str, text: str, files: list[PendingFile], exc: Exception) -> None:
        if conversation_id != self.conversation_id:
            return
        if not self.composer.text().strip():
            self.composer.set_text(text)  # give the words back rather than lose them
        if not self.composer.files:
            self.composer.set_files(files)  # and the files
        key = "composer.read_failed" if isinstance(exc, OSError) else "composer.send_failed"
        self.composer.set_error(t(key, reason=_reason(exc)))

    def _on_answer(self, item_id: str, action: str, answer: str) -> None:
        card = self._card(item_id)
        if self._attention is None or card is None or card.busy or item_id in self._answering:
            return
        card.set_busy(True)
        self._answering.add(item_id)
        body: dict[str, Any] = {"answer": answer} if action == "answer" else {}
        self._calls.start(
            self._attention.act(item_id, action, body),
            done=lambda _result: self._answered(item_id, None),
            failed=lambda exc: self._answered(item_id, exc),
        )

    def _answered(self, item_id: str, exc: Exception | None) -> None:
        self._answering.discard(item_id)
        card = self._card(item_id)
        if exc is not None:
            log.info("answer to %s refused: %s", item_id, reason(exc))
            if card is not None:
                card.show_error(t("needs.act_failed", reason=reason(exc)))
            return
        if card is not None:
            card.done()  # off until the conversation is read again: then it shows its line, or wakes
        if self.conversation_id is not None:
            self._messages.request()

    def _card(self, item_id: str) -> QuestionCardWidget | None:
        return next((card for card in self.question_cards() if card.item_id == item_id), None)

    def _wake_cards(self) -> None:
        """A card whose answer went through stays off until the next read; still open then, it wakes."""
        for card in self.question_cards():
            if card.busy and card.item_id not in self._answering:
                card.set_busy(False)

    def _on_stop(self) -> None:
        conversation_id = self.conversation_id
        if conversation_id is not None:
            self._calls.start(self._facade.cancel_reply(conversation_id))

    # -- layout and scrolling --------------------------------------------------------------------------

    def resizeEvent(self, event: QResizeEvent) -> None:
        self._fit_column(event.size().width())
        super().resizeEvent(event)

    def _fit_column(self, width: int) -> None:
        side = max(MIN_SIDE_MARGIN, (width - MAX_COLUMN_WIDTH) // 2)
        self._header_layout.setContentsMargins(side, 14, side, 12)
        self._column_layout.setContentsMargins(side, 20, side, 20)
        self._composer_layout.setContentsMargins(side, 4, side, 16)

    def _on_scrolled(self, value: int) -> None:
        self._stick = value >= self._scroll.verticalScrollBar().maximum() - STICK_SLACK_PX

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._found is not None:
            self._scroll_to_found()  # the layout settled after the jump: keep the found message in view
        elif self._stick:
            self._scroll.verticalScrollBar().setValue(maximum)

    # -- a message a search opened -----------------------------------------------------------------

    def _reveal_wanted(self) -> bool:
        wanted = self._wanted
        row = next((r for r in self._rows if r.view.id == wanted), None) if wanted is not None else None
        if row is None:
            return False
        self._wanted = None
        self._found = row
        self._stick = False  # the person came for this message, not the newest one
        self._scroll_to_found()
        QTimer.singleShot(0, self._scroll_to_found)  # again once the layout has placed the new rows
        self.found_highlight.show()
        self.found_highlight.raise_()
        self._found_timer.start()
        return True

    def _scroll_to_found(self) -> None:
        row = self._found
        if row is None:
            return
        self._column_layout.activate()
        geometry = row.geometry().translated(self._messages_box.pos())
        self.found_highlight.setGeometry(
            geometry.adjusted(-FOUND_PAD_PX, -FOUND_PAD_PX // 2, FOUND_PAD_PX, FOUND_PAD_PX // 2)
        )
        viewport = self._scroll.viewport().height()
        # A third of the way down, so what was said before it shows too; a tall message starts at the top.
        above = viewport // 3 if geometry.height() < viewport * 2 // 3 else MESSAGE_SPACING
        self._scroll.verticalScrollBar().setValue(max(0, geometry.top() - above))

    def _unhighlight(self) -> None:
        self._found_timer.stop()
        self._found = None
        self.found_highlight.hide()

    def is_at_bottom(self) -> bool:
        bar = self._scroll.verticalScrollBar()
        return bar.value() >= bar.maximum() - STICK_SLACK_PX

    def scroll_value(self) -> int:
        """How far down the messages are scrolled, in pixels."""
        return self._scroll.verticalScrollBar().value()

    def scroll_to_top(self) -> None:
        self._scroll.verticalScrollBar().setValue(0)

    def scroll_to_bottom(self) -> None:
        bar = self._scroll.verticalScrollBar()
        bar.setValue(bar.maximum())
