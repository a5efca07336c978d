"""An in-memory ChatFacade for UI tests and renders: tests drive replies by hand and read what was asked."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from core.activity_steps import ActivityStep
from core.bus import EventBus
from core.changes import ConversationsChanged, LiveReplyChanged, MessagesChanged, TaskChanged
from core.chat.attachment import Attachment
from core.chat.attachments import with_markers
from core.chat.views import (
    ConversationView,
    LiveReply,
    MessageRole,
    MessageState,
    MessageView,
    QuestionCard,
    RuleChip,
    TaskChip,
)
from core.errors import ConflictError
from core.search.snippet import snippet
from core.search.views import SearchHit


class FakeChatFacade:
    def __init__(self, bus: EventBus | None = None, bot_name: str = "Errand") -> None:
        self.bus = bus or EventBus()
        self.bot_name = bot_name
        self.said: list[tuple[str, str]] = []
        self.attached: list[list[Attachment]] = []  # the files of each say, in order
        self.cancelled: list[str] = []
        self.retried: list[tuple[str, int]] = []
        self.retry_error: Exception | None = None  # set to make `retry` refuse
        # Set to make `say` raise (the UI must give the text back and say why).
        self.say_error: Exception | None = None
        # Set to hold `list_messages` until the event is set (stale-read tests).
        self.read_gate: asyncio.Event | None = None
        self.reads: list[str] = []
        # Set (FakeTaskFacade does) to read each chip fresh from its task, as ChatService does on every read.
        self.chips_from: Callable[[str], TaskChip | None] | None = None
        self._conversations: dict[str, ConversationView] = {}
        self._messages: dict[str, list[MessageView]] = {}
        self._live: dict[str, LiveReply] = {}
        self._ids = itertools.count(1)
        self._turns = itertools.count(1)
        self._last_time = 0.0
        # SearchFacade: the queries asked, and task or rule hits a test adds (messages are searched as kept).
        self.searches: list[str] = []
        self.other_hits: list[SearchHit] = []

    # -- ChatFacade --------------------------------------------------------------------------------

    async def list_conversations(self) -> list[ConversationView]:
        return list(self._conversations.values())

    async def create_conversation(self, bot_id: str | None = None, title: str = "") -> ConversationView:
        return self.add_conversation(title=title, bot_id=bot_id or "bot-1")

    async def list_messages(self, conversation_id: str) -> list[MessageView]:
        self.reads.append(conversation_id)
        if self.read_gate is not None:
            await self.read_gate.wait()
        messages = list(self._messages.get(conversation_id, []))
        chips_from = self.chips_from
        if chips_from is None:
            return messages
        return [
            replace(m, task_chips=tuple(chips_from(c.task_id) or c for c in m.task_chips))
            if m.task_chips
            else m
            for m in messages
        ]

    async def say(
        self, conversation_id: str, text: str, *, attachments: Sequence[Attachment] = ()
    ) -> MessageView:
        self.said.append((conversation_id, text))
        self.attached.append(list(attachments))
        if self.say_error is not None:
            raise self.say_error
        names = [
            f"[{'image' if a.media_type.startswith('image/') else 'file'}: inbox/{a.name}]"
            for a in attachments
        ]
        return self.add_message(conversation_id, "user", with_markers(text, names), state="taken")

    def live_reply(self, conversation_id: str) -> LiveReply | None:
        return self._live.get(conversation_id)

    async def cancel_reply(self, conversation_id: str) -> None:
        self.cancelled.append(conversation_id)

    # -- SearchFacade (a MainWindow given search=facade finds words inside these messages) ----------

    async def search(self, query: str, limit: int = 30) -> list[SearchHit]:
        """Like SearchService: every word in one message (any case), newest first; plus `other_hits`
        whose title or snippet holds every word."""
        self.searches.append(query)
        words = query.split()
        if not words:
            return []

        def holds(text: str) -> bool:
            return all(word.casefold() in text.casefold() for word in words)

        hits = [hit for hit in self.other_hits if holds(f"{hit.title} {hit.snippet}")]
        for conversation_id, messages in self._messages.items():
            title = self._conversations[conversation_id].title
            for message in messages:
                if message.role != "error" and holds(message.text):
                    line, spans = snippet(message.text, words)
                    hits.append(
                        SearchHit(
                            kind="message",
                            title=title,
                            snippet=line,
                            spans=spans,
                            at=message.created_at,
                            bot_id=self._conversations[conversation_id].bot_id,
                            conversation_id=conversation_id,
                            message_id=message.id,
                        )
                    )
        hits.sort(key=lambda hit: hit.at, reverse=True)
        return hits[:limit]

    async def retry(self, conversation_id: str, message_id: int) -> None:
        """Like ChatService: only the retryable failed reply; it goes, and a live reply starts (the test
        finishes it with `finish_reply`). `retry_error` makes it refuse."""
        self.retried.append((conversation_id, message_id))
        await asyncio.sleep(0)
        if self.retry_error is not None:
            raise self.retry_error
        messages = self._messages[conversation_id]
        failed = next((m for m in messages if m.id == message_id and m.retryable), None)
        if failed is None:
            raise ConflictError(f"Message {message_id} is not the latest failed reply.")
        messages.remove(failed)
        self.start_live_reply(conversation_id)
        self.bus.publish(MessagesChanged(conversation_id))

    # -- driving it from a test ---------------------------------------------------------------------

    def add_conversation(
        self,
        title: str = "",
        last_line: str = "",
        bot_id: str = "bot-1",
        updated_at: float | None = None,
        busy: bool = False,
        channel: str = "desktop",
    ) -> ConversationView:
        conversation = ConversationView(
            id=f"c{next(self._ids)}",
            bot_id=bot_id,
            bot_name=self.bot_name,
            title=title,
            updated_at=updated_at if updated_at is not None else self._now(),
            last_line=last_line,
            busy=busy,
            channel=channel,
        )
        self._conversations[conversation.id] = conversation
        self._messages[conversation.id] = []
        self.bus.publish(ConversationsChanged())
        return conversation

    def add_message(
        self,
        conversation_id: str,
        role: MessageRole,
        text: str,
        *,
        steps: Iterable[ActivityStep] = (),
        duration_ms: int = 0,
        state: MessageState = "done",
        tokens_in: int = 0,
        tokens_out: int = 0,
        task_id: str = "",
        task_chips: Iterable[TaskChip] = (),
        question: QuestionCard | None = None,
        rule_id: str = "",
        rule_title: str = "",
        rule_chips: Iterable[RuleChip] = (),
    ) -> MessageView:
        messages = self._messages[conversation_id]
        message = MessageView(
            id=next(self._ids),
            conversation_id=conversation_id,
            role=role,
            text=text,
            state=state,
            created_at=self._now(),
            model="scripted" if role == "assistant" else "",
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            duration_ms=duration_ms,
            steps=tuple(steps),
            task_id=task_id,
            task_chips=tuple(task_chips),
            question=question,
            rule_id=rule_id,
            rule_title=rule_title,
            rule_chips=tuple(rule_chips),
        )
        messages.append(message)
        self._touch(conversation_id, last_line=text)
        self.bus.publish(MessagesChanged(conversation_id))
        self.bus.publish(ConversationsChanged())
        return message

    def fail_reply(self, conversation_id: str, text: str) -> MessageView:
        """Store a failed reply (the red-dotted error) that 重试 is offered on, as the latest one is; an
        earlier failed reply stops being retryable."""
        messages = self._messages[conversation_id]
        messages[:] = [replace(m, retryable=False) for m in messages]
        self.add_message(conversation_id, "error", text, state="error")
        messages[-1] = replace(messages[-1], retryable=True)
        return messages[-1]

    def start_live_reply(self, conversation_id: str) -> LiveReply:
        live = LiveReply(
            conversation_id=conversation_id,
            turn_id=f"turn-{next(self._turns)}",
            text="",
            steps=(),
            started_at=self._now(),
        )
        self._live[conversation_id] = live
        self._touch(conversation_id, busy=True)
        self.bus.publish(LiveReplyChanged(conversation_id))
        self.bus.publish(ConversationsChanged())
        return live

    def stream(self, conversation_id: str, text: str) -> None:
        live = self._live[conversation_id]
        self._live[conversation_id] = replace(live, text=live.text + text)
        self.bus.publish(LiveReplyChanged(conversation_id))

    def add_step(self, conversation_id: str, step: ActivityStep) -> None:
        live = self._live[conversation_id]
        self._live[conversation_id] = replace(live, steps=(*live.steps, step))
        self.bus.publish(LiveReplyChanged(conversation_id))

    def finish_reply(
        self,
        conversation_id: str,
        text: str,
        steps: Iterable[ActivityStep] | None = None,
        duration_ms: int = 0,
    ) -> MessageView:
        """Store the reply (with the live steps unless given), end the live reply, and announce both."""
        live = self._live.pop(conversation_id, None)
        chosen = tuple(steps) if steps is not None else (live.steps if live else ())
        self._touch(conversation_id, busy=False)
        message = self.add_message(conversation_id, "assistant", text, steps=chosen, duration_ms=duration_ms)
        self.bus.publish(LiveReplyChanged(conversation_id))
        return message

    def end_live_reply(self, conversation_id: str) -> None:
        """The turn ended without storing a reply (e.g. cancelled before any text)."""
        self._live.pop(conversation_id, None)
        self._touch(conversation_id, busy=False)
        self.bus.publish(LiveReplyChanged(conversation_id))
        self.bus.publish(ConversationsChanged())

    def set_question(self, question_id: str, status: str, answer: str = "") -> MessageView:
        """The question (or approval) behind a card was answered, withdrawn or expired: its card reads the
        new status from now on, and the task changes, as when the host closes it (ApprovalCenter)."""
        for messages in self._messages.values():
            for position, message in enumerate(messages):
                card = message.question
                if card is not None and card.question_id == question_id:
                    changed = replace(message, question=replace(card, status=status, answer=answer))
                    messages[position] = changed
                    self.bus.publish(TaskChanged(message.task_id))  # "" for a chat's own approval
                    return changed
        raise KeyError(question_id)

    def messages(self, conversation_id: str) -> list[MessageView]:
        return list(self._messages[conversation_id])

    def _touch(self, conversation_id: str, last_line: str | None = None, busy: bool | None = None) -> None:
        current = self._conversations[conversation_id]
        self._conversations[conversation_id] = replace(
            current,
            updated_at=self._now() if last_line is not None else current.updated_at,
            last_line=last_line if last_line is not None else current.last_line,
            busy=busy if busy is not None else current.busy,
        )

    def _now(self) -> float:
        # Strictly increasing, so "most recent first" never depends on clock resolution.
        self._last_time = max(time.time(), self._last_time + 0.001)
        return self._last_time
