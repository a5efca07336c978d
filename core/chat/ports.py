"""The seams of the chat pipeline, as the parts around it see it.

- `InboundChat`: where a person's words enter a conversation. The desktop and the API hand messages here
  today (ChatService implements it); a chat channel (WeChat, Feishu, DingTalk, Telegram) will hand each
  stored, deduplicated inbound message here, one conversation per peer or group.
- `LiveTurns`: the reply a conversation is streaming now (ChatService), read by tools that must know the
  turn that called them (a task started from a reply carries that turn, for the chip under it).
- `ChatToolSource`: the tools a chat session gets beyond the common ones (tasks, rules, questions), built
  when a session opens with the chat's live turns, so neither side is wired to the other later.
- `TaskChips`: tasks started from a conversation, by the turn that started them (the TaskService).
- `ReplyOutbox`: where a reply in a conversation on a chat platform is queued to go out (the Outbox), in
  the transaction that stores it, so a crash can neither lose the reply nor send it twice.
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy.orm import Session

from core.agent.tool_api import ToolSpec
from core.chat.views import LiveReply, MessageView, TaskChip
from core.store.deliveries import DeliveryPurpose
from core.translations import Language


class InboundChat(Protocol):
    async def say(self, conversation_id: str, text: str, *, source: str = "") -> MessageView:
        """Store the person's message and queue the chat turn that answers it; the reply comes later. A
        `source` (a channel's stored message) is stored once however often it is said."""
        ...

    async def note(self, conversation_id: str, text: str, *, source: str) -> tuple[MessageView, bool]:
        """Store the person's message as dealt with, starting no turn (it answered a question, or went to
        a task); whether it is new."""
        ...

    async def said_before(self, conversation_id: str, source: str) -> MessageView | None: ...


class LiveTurns(Protocol):
    def live_reply(self, conversation_id: str) -> LiveReply | None: ...


class ChatToolSource(Protocol):
    def chat_tools(self, live: LiveTurns) -> list[ToolSpec]: ...


class TaskChips(Protocol):
    async def chips(self, conversation_id: str, lang: Language = "zh") -> dict[str, list[TaskChip]]: ...


class ReplyOutbox(Protocol):
    def stage(
        self,
        s: Session,
        *,
        delivery_id: str,
        bot_id: str,
        conversation_id: str,
        purpose: DeliveryPurpose,
        text: str,
        task_id: str = "",
        run_id: str = "",
        message_id: int = 0,
    ) -> bool: ...

    async def flush(self) -> int: ...
