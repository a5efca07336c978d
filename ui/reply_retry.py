"""重试 on a failed reply (docs/desktop.md#chat-view): the small button in the error's head, and the view's
side of asking the chat facade to answer again.

The button shows only on the conversation's latest failed reply (`MessageView.retryable`); a click goes
off once (the button turns to 重试中… until the conversation is read again, when the failed reply is gone
and the new one streams in its place). A refusal (a reply is being written, the reply is no longer the
latest) is said under the error and the button comes back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QPushButton, QWidget

from core.chat.facade import ChatFacade
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.form import button
from ui.i18n import t

if TYPE_CHECKING:
    from ui.message_widgets import MessageWidget  # it builds the button from here


def retry_button(parent: QWidget) -> QPushButton:
    made = button(t("message.retry"), parent)
    made.setObjectName("retryButton")  # its own look: resources/styles/*.retry.qss
    made.setFont(theme.font("small"))
    made.setToolTip(t("message.retry.tip"))
    made.setAccessibleName(t("message.retry"))
    return made


def set_retrying(made: QPushButton, retrying: bool) -> None:
    made.setEnabled(not retrying)
    made.setText(t("message.retrying") if retrying else t("message.retry"))


def wire_retry(
    row: MessageWidget, chat: ChatFacade, calls: AsyncCalls, reread: Callable[[str], None]
) -> None:
    """Make `row`'s 重试 ask `chat` to answer again; `reread(conversation_id)` once it went (the failed
    reply is gone then and the new one streams), the refusal under the error when it did not."""
    conversation_id = row.view.conversation_id

    def refused(exc: Exception) -> None:
        from ui.message_widgets import ErrorMessage  # imported here: it imports this module

        if isinstance(row, ErrorMessage):
            row.retry_refused(reason(exc))

    row.retryRequested.connect(
        lambda message_id: calls.start(
            chat.retry(conversation_id, message_id),
            done=lambda _none: reread(conversation_id),
            failed=refused,
        )
    )
