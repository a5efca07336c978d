"""The commands and reads the desktop UI uses for chat. `ChatService` implements it; UI tests fake it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.chat.attachment import Attachment
from core.chat.views import ConversationView, LiveReply, MessageView


class ChatFacade(Protocol):
    async def list_conversations(self) -> list[ConversationView]: ...

    async def create_conversation(self, bot_id: str | None = None, title: str = "") -> ConversationView: ...

    async def list_messages(self, conversation_id: str) -> list[MessageView]: ...

    async def say(
        self, conversation_id: str, text: str, *, attachments: Sequence[Attachment] = ()
    ) -> MessageView:
        """The desktop user speaks, with files attached or not. Returns the stored user message at once;
        the reply comes later. InvalidInputError naming the attachment that is refused (nothing kept)."""
        ...

    def live_reply(self, conversation_id: str) -> LiveReply | None:
        """The reply being streamed now, if any. Cheap: in memory."""
        ...

    async def cancel_reply(self, conversation_id: str) -> None: ...

    async def retry(self, conversation_id: str, message_id: int) -> None:
        """重试 the conversation's latest failed reply: the model is asked again for the same request (the
        person's words are not said twice) and the new reply replaces the failed one. ConflictError for a
        message that is not that reply, or while a reply is being written."""
        ...
