"""Chat: conversations, messages and the human lane (docs/chat.md#the-human-lane).

Each conversation has one agent session, `chat-<conversation>`, whose own input queue makes the
conversation serial; conversations run in parallel. Replies are built from the runtime's event stream, so a
turn that nobody asked for (a background job waking the session) is stored as a reply too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from core.activity_steps import ActivityLog, ActivityStep
from core.agent import events as ev
from core.agent.model_config import RetryPolicy
from core.agent.session_spec import SessionSpec
from core.bots.service import BotService
from core.bus import EventBus
from core.changes import ConversationsChanged, LiveReplyChanged, MessagesChanged
from core.chat import rule_origins
from core.chat.attachment import Attachment
from core.chat.attachments import check_all, with_markers
from core.chat.attachments import save_all as save_attachments
from core.chat.ports import ChatToolSource, ReplyOutbox, TaskChips
from core.chat.retry import find_failed_reply, offer_retry, replace_failed_reply, retryable_id
from core.chat.views import (
    ConversationView,
    LiveReply,
    MessageState,
    MessageView,
    QuestionCard,
    TaskChip,
)
from core.clock import Clock
from core.errors import ConflictError, InvalidInputError, NotFoundError, UnavailableError
from core.ids import chat_session_id, new_id
from core.store import approvals as approval_rows
from core.store import conversations as conv_rows
from core.store import deliveries as delivery_rows
from core.store import messages as msg_rows
from core.store.conversations import ConversationRecord
from core.store.database import Database
from core.store.messages import MessageRecord
from core.store.rules import RuleRecord
from core.tasks.language import language_of

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.agent.session import AgentSession

log = logging.getLogger(__name__)

MAX_TEXT = 100_000
TITLE_LENGTH = 40
RESTART_NOTICE = "Errand stopped while answering this message. Send it again if you still need an answer."
_PREFIX = "chat-"


def _input_id(message_id: int) -> str:
    return f"m{message_id}"


def _message_id(input_id: str) -> int | None:
    if input_id.startswith("m") and input_id[1:].isdigit():
        return int(input_id[1:])
    return None


def message_view(
    record: MessageRecord,
    chips: tuple[TaskChip, ...] = (),
    question: QuestionCard | None = None,
    rules: dict[str, RuleRecord] | None = None,
) -> MessageView:
    """`rules`: the rules the messages name (`rule_origins.rules_named`), for their titles and chips."""
    rules = rules or {}
    return MessageView(
        id=record.id,
        conversation_id=record.conversation_id,
        role=record.role,
        text=record.text,
        state=record.state,
        created_at=record.created_at,
        model=record.model,
        tokens_in=record.tokens_in,
        tokens_out=record.tokens_out,
        duration_ms=record.duration_ms,
        steps=tuple(ActivityStep.from_json(s) for s in record.activity),
        task_id=record.task_id,
        task_chips=chips if record.role == "assistant" else (),
        question=question,
        on_platform=bool(record.channel_ref),
        rule_id=record.rule_id,
        rule_title=rule_origins.rule_title(record, rules),
        rule_chips=rule_origins.rule_chips(record, rules),
    )


@dataclass
class _LiveTurn:
    conversation_id: str
    turn_id: str
    started_mono: float
    started_wall: float
    activity: ActivityLog = field(default_factory=ActivityLog)
    texts: list[str] = field(default_factory=list)  # one entry per model step
    input_ids: list[str] = field(default_factory=list)
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in self.texts if t)


class ChatService:
    """Implements `core.chat.facade.ChatFacade` and the chat seams `InboundChat` and `LiveTurns`
    (core.chat.ports)."""

    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        *,
        tools: ChatToolSource,
        task_chips: TaskChips,
        replies: ReplyOutbox,
        retry: RetryPolicy | None = None,
        prompt_sections: tuple[str, ...] = (),
    ) -> None:
        self._task_chips = task_chips
        self._replies = replies
        self._flushing: set[asyncio.Task[int]] = set()
        self._retry = retry or RetryPolicy()
        self._tools = tools
        self._prompt_sections = prompt_sections
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._runtime: AgentRuntime | None = None
        self._live: dict[str, _LiveTurn] = {}
        self._retrying: set[str] = set()  # conversations whose 重试 is being checked and started
        self._writes: asyncio.Queue[Callable[[], Awaitable[None]] | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self, runtime: AgentRuntime) -> None:
        self._runtime = runtime
        self._unsubscribe = runtime.subscribe(self._on_agent_event)
        self._writer = asyncio.get_running_loop().create_task(self._write_loop(), name="chat-writer")
        await self._recover()

    async def stop(self) -> None:
        if self._unsubscribe:
            self._unsubscribe()
        if self._writer is not None:
            self._writes.put_nowait(None)
            await self._writer
        for flushing in list(self._flushing):
            flushing.cancel()
        await asyncio.gather(*self._flushing, return_exceptions=True)

    async def drain(self) -> None:
        """Wait until every pending write is stored (tests and shutdown)."""
        done = asyncio.Event()

        async def mark() -> None:
            done.set()

        self._writes.put_nowait(mark)
        await done.wait()

    async def _write_loop(self) -> None:
        while True:
            job = await self._writes.get()
            if job is None:
                return
            try:
                await job()
            except Exception:
                log.exception("chat write failed")

    # ---- reads --------------------------------------------------------------------------------------

    async def list_conversations(self) -> list[ConversationView]:
        def read(s: Session) -> list[tuple[ConversationRecord, MessageRecord | None]]:
            return [(c, msg_rows.last_message(s, c.id)) for c in conv_rows.list_conversations(s)]

        rows = await self._db.read(read)
        names = await self._bots.names()
        return [
            ConversationView(
                id=c.id,
                bot_id=c.bot_id,
                bot_name=names.get(c.bot_id, ""),
                title=c.title,
                updated_at=c.updated_at,
                last_line=(last.text.strip().splitlines() or [""])[0][:120] if last else "",
                busy=self._is_busy(c.id),
                channel=c.channel,
            )
            for c, last in rows
        ]

    async def get_conversation(self, conversation_id: str) -> ConversationView:
        for view in await self.list_conversations():
            if view.id == conversation_id:
                return view
        raise NotFoundError("conversation", conversation_id)

    async def list_messages(self, conversation_id: str) -> list[MessageView]:
        await self._conversation(conversation_id)

        def read(
            s: Session,
        ) -> tuple[list[MessageRecord], dict[int, QuestionCard], dict[str, RuleRecord]]:
            cards: dict[int, QuestionCard] = {}
            for message_id, item_id in delivery_rows.asking_messages(s, conversation_id).items():
                ask = approval_rows.get_approval(s, item_id)
                if ask is not None:
                    cards[message_id] = QuestionCard(
                        ask.id, ask.options, ask.default, ask.status, ask.answer, ask.kind
                    )
            messages = msg_rows.list_messages(s, conversation_id)
            return messages, cards, rule_origins.rules_named(s, messages)

        records, cards, rules = await self._db.read(read)
        chips = await self._task_chips.chips(conversation_id)
        views = [message_view(r, tuple(chips.get(r.turn_id, ())), cards.get(r.id), rules) for r in records]
        return offer_retry(views, retryable_id(records))

    def live_reply(self, conversation_id: str) -> LiveReply | None:
        live = self._live.get(conversation_id)
        if live is None:
            return None
        return LiveReply(conversation_id, live.turn_id, live.text, live.activity.steps, live.started_wall)

    def live_replies(self) -> list[LiveReply]:
        """Every reply being streamed now (needs-you looks for turns that have been stuck for long)."""
        return [r for cid in list(self._live) if (r := self.live_reply(cid)) is not None]

    def _is_busy(self, conversation_id: str) -> bool:
        session = self._runtime.get(chat_session_id(conversation_id)) if self._runtime else None
        return conversation_id in self._live or (session is not None and session.status == "running")

    async def _conversation(self, conversation_id: str) -> ConversationRecord:
        record = await self._db.read(lambda s: conv_rows.get_conversation(s, conversation_id))
        if record is None:
            raise NotFoundError("conversation", conversation_id)
        return record

    # ---- commands -----------------------------------------------------------------------------------

    async def create_conversation(self, bot_id: str | None = None, title: str = "") -> ConversationView:
        bot = await self._bots.get(bot_id) if bot_id else await self._bots.ensure_default()
        title = title.strip()
        if len(title) > 200:
            raise InvalidInputError("title", "must be at most 200 characters")
        conversation_id = new_id("c")
        now = self._clock.time()
        await self._db.write(
            lambda s: conv_rows.insert_conversation(
                s, id=conversation_id, bot_id=bot.id, title=title, now=now
            )
        )
        self._bus.publish(ConversationsChanged())
        return await self.get_conversation(conversation_id)

    async def say(
        self,
        conversation_id: str,
        text: str,
        *,
        source: str = "",
        attachments: Sequence[Attachment] = (),
    ) -> MessageView:
        """Store the person's words and queue the turn that answers them. With `source` (a channel's stored
        message), saying it again gives the message stored the first time and starts no second turn.
        `attachments` are saved in the conversation's inbox first and named in the stored text
        (core.chat.attachments); words may then be empty."""
        if not isinstance(text, str) or not (text.strip() or attachments):
            raise InvalidInputError("text", "must be a non-empty string")
        if len(text) > MAX_TEXT:
            raise InvalidInputError("text", f"must be at most {MAX_TEXT} characters")
        check_all(attachments)
        conversation = await self._conversation(conversation_id)
        if attachments:
            # Before the message is stored: a message never names a file that is not there. A crash between
            # leaves files no message names; sending again finds them and keeps one copy of each.
            workspace = self._bots.workspace_of(conversation.bot_id)
            try:
                markers = await save_attachments(attachments, workspace, conversation_id)
            except OSError as exc:
                raise UnavailableError(f"the attachments could not be saved in {workspace}: {exc}") from exc
            text = with_markers(text, markers)
        now = self._clock.time()

        def store(s: Session) -> tuple[MessageRecord, bool]:
            if source and (earlier := msg_rows.message_from(s, conversation_id, source)) is not None:
                return earlier, False
            record = msg_rows.insert_message(
                s,
                conversation_id=conversation_id,
                role="user",
                text=text,
                state="queued",
                now=now,
                source=source,
            )
            msg_rows.set_input_id(s, record.id, _input_id(record.id))
            if not conversation.title:
                conv_rows.rename_conversation(
                    s, conversation_id, text.strip().splitlines()[0][:TITLE_LENGTH], now
                )
            conv_rows.touch_conversation(s, conversation_id, now)
            found = msg_rows.get_message(s, record.id)
            assert found is not None
            return found, True

        record, new = await self._db.write(store)
        if not new:
            return message_view(record)  # handed over before; its turn was queued then (or is recovered)
        self._bus.publish(MessagesChanged(conversation_id))
        self._bus.publish(ConversationsChanged())
        session = await self._session(conversation)
        session.prompt(text, record.input_id)
        return message_view(record)

    async def note(self, conversation_id: str, text: str, *, source: str) -> tuple[MessageView, bool]:
        """Store the person's words as said and dealt with, with no chat turn: a channel message that
        answered a question or followed up a task went there instead. Keyed by `source` like `say`; the
        flag says whether it is new."""
        if not text.strip():
            raise InvalidInputError("text", "must be a non-empty string")
        conversation = await self._conversation(conversation_id)
        now = self._clock.time()

        def store(s: Session) -> tuple[MessageRecord, bool]:
            if (earlier := msg_rows.message_from(s, conversation_id, source)) is not None:
                return earlier, False
            record = msg_rows.insert_message(
                s,
                conversation_id=conversation_id,
                role="user",
                text=text[:MAX_TEXT],
                state="answered",
                now=now,
                source=source,
            )
            if not conversation.title:
                conv_rows.rename_conversation(
                    s, conversation_id, text.strip().splitlines()[0][:TITLE_LENGTH], now
                )
            conv_rows.touch_conversation(s, conversation_id, now)
            return record, True

        record, new = await self._db.write(store)
        if new:
            self._bus.publish(MessagesChanged(conversation_id))
            self._bus.publish(ConversationsChanged())
        return message_view(record), new

    async def said_before(self, conversation_id: str, source: str) -> MessageView | None:
        """The message stored from `source` here, if it was handed over before."""
        record = await self._db.read(lambda s: msg_rows.message_from(s, conversation_id, source))
        return message_view(record) if record is not None else None

    async def cancel_reply(self, conversation_id: str) -> None:
        await self._conversation(conversation_id)
        session = self._runtime.get(chat_session_id(conversation_id)) if self._runtime else None
        if session is not None:
            await session.cancel()

    async def retry(self, conversation_id: str, message_id: int) -> None:
        """重试: ask the model again for the request whose reply `message_id` failed, without saying the
        person's words again (core.chat.retry). The failed reply is replaced by the new one, which arrives
        like any reply. Raises NotFoundError, or ConflictError when it is not the latest failed reply, a
        reply is being written, or the request can no longer be asked again."""
        busy = ConflictError(
            "A reply is being written in this conversation; retry once it has finished.",
            key="error.retry.busy",
        )
        if conversation_id in self._retrying:
            raise busy
        self._retrying.add(conversation_id)
        try:
            conversation = await self._conversation(conversation_id)
            failed = await self._db.read(lambda s: find_failed_reply(s, conversation_id, message_id))
            session = await self._session(conversation)
            # No await between this check and resume(): a message said meanwhile finds the turn running
            # (and queues behind it), and a retry after this one finds the failed reply gone.
            if self._is_busy(conversation_id):
                raise busy
            said = session.unanswered_inputs()
            if not session.resume():
                raise ConflictError(
                    f"Message {message_id}'s request can no longer be asked again; send the message again.",
                    key="error.retry.gone",
                )
            asked = [m for m in (_message_id(i) for i in said) if m is not None]
            await self._db.write(lambda s: replace_failed_reply(s, failed, asked))
        finally:
            self._retrying.discard(conversation_id)
        self._bus.publish(MessagesChanged(conversation_id))
        self._bus.publish(ConversationsChanged())

    async def _session(self, conversation: ConversationRecord) -> AgentSession:
        runtime = self._require_runtime()
        model = await self._bots.model_config(conversation.bot_id)
        session = runtime.get(chat_session_id(conversation.id))
        if session is not None:
            session.set_model(model)
            return session
        spec = SessionSpec(
            session_id=chat_session_id(conversation.id),
            kind="chat",
            bot_id=conversation.bot_id,
            cwd=self._bots.workspace_of(conversation.bot_id),
            model=model,
            permission=await self._bots.permission(conversation.bot_id),
            retry=self._retry,
            extra_tools=tuple(self._tools.chat_tools(self)),  # built with this chat's live turns
            prompt_sections=self._prompt_sections,
        )
        return await runtime.open_session(spec)

    def _require_runtime(self) -> AgentRuntime:
        if self._runtime is None:
            raise RuntimeError("the agent runtime has not started yet")
        return self._runtime

    async def _recover(self) -> None:
        """After a restart, every message the person sent and never saw answered is answered once:
        - never taken (the turn had not reached it): handed over again;
        - taken, and its turn finished in the history (the reply was lost on the way to the store): that
          answer is stored as the reply, without asking the model again;
        - taken, and its last request unanswered at the end of the history: the request is asked again
          (nothing had run since it was written);
        - taken, and its turn cut off inside a tool: a notice, since asking again could repeat what the
          tool did. See docs/recovery.md."""
        pending = await self._db.read(msg_rows.unanswered_user_messages)
        for record in pending:
            conversation = await self._conversation(record.conversation_id)
            session = await self._session(conversation)
            tail = session.tail_of(record.input_id)
            if tail.state == "not_taken":
                session.prompt(record.text, record.input_id)
            elif tail.state == "unanswered" and session.resume():
                continue
            else:
                await self._close_unanswered(record, tail.text if tail.state == "answered" else None)

    async def _close_unanswered(self, record: MessageRecord, answer: str | None) -> None:
        now = self._clock.time()

        def close(s: Session) -> bool:
            reply = msg_rows.insert_message(
                s,
                conversation_id=record.conversation_id,
                role="assistant" if answer is not None else "notice",
                text=answer if answer is not None else RESTART_NOTICE,
                state="done",
                now=now,
            )
            msg_rows.set_message_state(s, record.id, "answered")
            conv_rows.touch_conversation(s, record.conversation_id, now)
            return self._stage_reply(s, record.conversation_id, reply)

        if await self._db.write(close):
            self._flush_replies()
        self._bus.publish(MessagesChanged(record.conversation_id))

    def _stage_reply(self, s: Session, conversation_id: str, reply: MessageRecord) -> bool:
        """Queue `reply` for the conversation's chat platform, if it lives on one (a desktop conversation
        is read where it is stored). In the caller's transaction."""
        conversation = conv_rows.get_conversation(s, conversation_id)
        if conversation is None or conversation.channel == "desktop" or not reply.text.strip():
            return False
        return self._replies.stage(
            s,
            delivery_id=f"reply:{reply.id}",
            bot_id=conversation.bot_id,
            conversation_id=conversation_id,
            purpose="reply",
            text=reply.text,
            message_id=reply.id,
        )

    def _flush_replies(self) -> None:
        """Send what was staged without holding up the chat writer: a platform answers in its own time."""
        flushing = asyncio.get_running_loop().create_task(self._replies.flush())
        self._flushing.add(flushing)
        flushing.add_done_callback(self._flushing.discard)

    # ---- building replies from agent events ---------------------------------------------------------

    def _on_agent_event(self, event: ev.AgentEvent) -> None:
        session_id = event.session_id
        if not session_id.startswith(_PREFIX):
            return
        conversation_id = session_id[len(_PREFIX) :]
        if isinstance(event, ev.TurnStarted):
            self._live[conversation_id] = _LiveTurn(
                conversation_id, event.turn_id, self._clock.monotonic(), self._clock.time()
            )
            self._bus.publish(LiveReplyChanged(conversation_id))
            self._bus.publish(ConversationsChanged())
            return
        live = self._live.get(conversation_id)
        if live is None:
            return
        if isinstance(event, ev.InputTaken):
            live.input_ids.append(event.input_id)
            message_id = _message_id(event.input_id)
            if message_id is not None:
                self._enqueue(self._mark(conversation_id, [message_id], "taken"))
            return
        if isinstance(event, ev.ModelRequestStarted):
            live.texts.append("")
            return
        if isinstance(event, ev.TextDelta):
            if not live.texts:
                live.texts.append("")
            live.texts[-1] += event.text
            self._bus.publish(LiveReplyChanged(conversation_id))
            return
        if isinstance(event, ev.AssistantMessage):
            live.model = event.model
            live.tokens_in += event.usage.input_tokens
            live.tokens_out += event.usage.output_tokens
        if live.activity.feed(event):
            self._bus.publish(LiveReplyChanged(conversation_id))
        if isinstance(event, ev.TurnEnded) and event.turn_id == live.turn_id:
            self._enqueue(self._store_reply(live, event))

    def _enqueue(self, job: Awaitable[None]) -> None:
        async def run() -> None:
            await job

        self._writes.put_nowait(run)

    async def _mark(self, conversation_id: str, message_ids: list[int], state: MessageState) -> None:
        def update(s: Session) -> None:
            for message_id in message_ids:
                msg_rows.set_message_state(s, message_id, state)

        await self._db.write(update)
        self._bus.publish(MessagesChanged(conversation_id))

    async def _store_reply(self, live: _LiveTurn, ended: ev.TurnEnded) -> None:
        now = self._clock.time()
        duration_ms = round((self._clock.monotonic() - live.started_mono) * 1000)
        text = live.text
        state: MessageState = ended.outcome
        answered = [m for m in (_message_id(i) for i in live.input_ids) if m is not None]

        def store(s: Session) -> bool:
            said: list[MessageRecord] = []
            if text or ended.outcome == "done" or live.activity.steps:
                reply = msg_rows.insert_message(
                    s,
                    conversation_id=live.conversation_id,
                    role="assistant",
                    text=text,
                    state=state,
                    now=now,
                    turn_id=live.turn_id,
                    model=live.model,
                    tokens_in=live.tokens_in,
                    tokens_out=live.tokens_out,
                    duration_ms=duration_ms,
                    activity=live.activity.to_json(),
                )
                said.append(reply)
            if ended.outcome == "error":
                # Worded in the conversation's language, like every pushed text (DESIGN.md "Defaults").
                lang = language_of(" ".join(msg_rows.recent_user_texts(s, live.conversation_id, 5)))
                error = msg_rows.insert_message(
                    s,
                    conversation_id=live.conversation_id,
                    role="error",
                    text=ended.error_words.get(lang) or ended.error,
                    state="error",
                    now=now,
                    turn_id=live.turn_id,
                )
                said.append(error)
            for message_id in answered:
                msg_rows.set_message_state(s, message_id, "answered")
            conv_rows.touch_conversation(s, live.conversation_id, now)
            # On a chat platform the person reads it there: the words if there are any, else the error.
            worded = [m for m in said if m.text.strip()]
            return bool(worded) and self._stage_reply(s, live.conversation_id, worded[0])

        try:
            if await self._db.write(store):
                self._flush_replies()
        finally:
            if self._live.get(live.conversation_id) is live:
                del self._live[live.conversation_id]
            self._bus.publish(MessagesChanged(live.conversation_id))
            self._bus.publish(LiveReplyChanged(live.conversation_id))
            self._bus.publish(ConversationsChanged())
