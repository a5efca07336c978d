"""An in-memory AttentionFacade for UI tests and renders: tests add and remove needs-you items by hand, and
each change is announced with TaskChanged on the bus (the needs-you list changes whenever a task does).

`act` checks what the real service checks (the item exists, offers the action, takes the answer), records
every call in `acted`, and raises `act_error` when a test sets it. It doesn't resolve the item: the test
removes it, as the real cause going away would (or sets `resolves`, and a question or approval that was
pushed into the chat is then closed there too, as the host does).

`push_question` and `push_approval` ask as the host does: the needs-you item, and in the fake chat the
message that carries its card, worded as the host words it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

from core.attention.items import (
    AttentionItem,
    approval_item,
    can,
    channel_login_item,
    check_answer,
    failed_task_item,
    question_item,
    split_item_id,
)
from core.attention.routing import AnswerError
from core.bus import EventBus
from core.changes import TaskChanged
from core.chat.views import MessageView, QuestionCard
from core.errors import ConflictError, NotFoundError, UnprocessableError
from core.tasks.language import language_of, pushed
from tests.fakes.fake_chat import FakeChatFacade


class FakeAttentionFacade:
    def __init__(self, chat: FakeChatFacade | None = None, bus: EventBus | None = None) -> None:
        self.bus = bus or (chat.bus if chat is not None else EventBus())
        self.chat = chat
        # Set to close what `act` answered, as the host does: the item goes, and its card in the chat
        # reads answered (with the answer, or approved / denied).
        self.resolves = False
        self.acted: list[tuple[str, str, dict[str, Any]]] = []
        self.reads: list[str] = []  # the language of each read
        # Set to make the calls raise (the UI must say why, not break).
        self.act_error: Exception | None = None
        self.items_error: Exception | None = None
        # Set to hold `act` until the event is set (the UI must not wait on it).
        self.act_gate: asyncio.Event | None = None
        self._items: dict[str, AttentionItem] = {}
        self._count = 0

    # -- AttentionFacade ----------------------------------------------------------------------------

    async def items(self, lang: str = "zh") -> list[AttentionItem]:
        self.reads.append(lang)
        if self.items_error is not None:
            raise self.items_error
        return list(self._items.values())

    async def act(self, item_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        self.acted.append((item_id, action, dict(body)))
        if self.act_gate is not None:
            await self.act_gate.wait()
        if self.act_error is not None:
            raise self.act_error
        item = self._items.get(item_id)
        if item is None:
            raise NotFoundError("needs-you item", item_id)
        if not can(item, action):
            raise ConflictError(f"{item_id} does not offer {action!r}; it offers: {', '.join(item.actions)}.")
        if action == "answer":
            raw = body.get("answer")
            if not isinstance(raw, str) or not raw.strip():
                raise UnprocessableError("answer", "send a non-empty string in 'answer'")
            try:
                check_answer(item, raw)
            except AnswerError as exc:
                raise UnprocessableError("answer", str(exc)) from exc
        if self.resolves:
            self._resolve(item, action, body)
        if item.kind == "channel_login" and action == "open":
            # As the service answers: the channel to scan again, and its bot.
            return {"done": action, "channelId": split_item_id(item_id)[1], "botId": item.bot_id}
        return {"done": action, "taskId": item.task_id, "conversationId": item.conversation_id}

    # -- driving it from a test ---------------------------------------------------------------------

    def add(self, item: AttentionItem) -> AttentionItem:
        """Add an item at the end (the service's order is the order they were added in)."""
        self._items[item.id] = item
        self._announce(item)
        return item

    def add_channel_login(
        self, channel_id: str, bot_id: str = "bot-1", *, reason: str = "", lang: str = "en"
    ) -> AttentionItem:
        """「微信登录已过期」 for a channel, worded as the service words it."""
        channel = "WeChat" if lang == "en" else "微信"
        return self.add(channel_login_item(channel_id, bot_id, channel, time.time(), reason, lang=lang))

    def remove(self, item_id: str) -> None:
        item = self._items.pop(item_id, None)
        if item is not None:
            self._announce(item)

    def clear(self) -> None:
        for item_id in list(self._items):
            self.remove(item_id)

    def add_question(
        self,
        title: str,
        question: str,
        options: Sequence[str] = (),
        default: str | None = None,
        *,
        since: float | None = None,
        task_id: str = "",
        conversation_id: str = "c1",
        lang: str = "en",
    ) -> AttentionItem:
        n = self._next()
        return self.add(
            question_item(
                f"q_{n}",
                task_id or f"t_{n:012x}",
                "bot-1",
                title,
                question,
                options,
                default,
                since if since is not None else time.time(),
                conversation_id=conversation_id,
                lang=lang,
            )
        )

    def add_failed_task(
        self,
        title: str,
        reason: str,
        *,
        since: float | None = None,
        task_id: str = "",
        conversation_id: str = "c1",
        lang: str = "en",
    ) -> AttentionItem:
        n = self._next()
        return self.add(
            failed_task_item(
                task_id or f"t_{n:012x}",
                "bot-1",
                title,
                reason,
                since if since is not None else time.time(),
                conversation_id=conversation_id,
                lang=lang,
            )
        )

    def add_approval(
        self,
        request: str,
        task_title: str = "",
        *,
        since: float | None = None,
        task_id: str = "",
        conversation_id: str = "c1",
        lang: str = "en",
    ) -> AttentionItem:
        n = self._next()
        return self.add(
            approval_item(
                f"a_{n}",
                "bot-1",
                request,
                since if since is not None else time.time(),
                task_id=task_id,
                task_title=task_title,
                conversation_id=conversation_id,
                lang=lang,
            )
        )

    def push_question(
        self,
        conversation_id: str,
        title: str,
        question: str,
        options: Sequence[str] = (),
        default: str | None = None,
        *,
        task_id: str = "",
    ) -> tuple[AttentionItem, MessageView]:
        """A task asks: its needs-you item, and the message in the chat that carries the card."""
        assert self.chat is not None, "push_question needs the fake chat"
        lang = language_of(title + question)
        item = self.add_question(
            title, question, options, default, task_id=task_id, conversation_id=conversation_id, lang=lang
        )
        text = pushed(lang, "question", title=title, question=question)
        if options:
            text += "\n" + pushed(lang, "options", options=" / ".join(options))
        if default is not None:
            text += "\n" + pushed(lang, "default", default=default)
        card = QuestionCard(split_item_id(item.id)[1], tuple(options), default, "open")
        message = self.chat.add_message(
            conversation_id, "assistant", text, task_id=item.task_id, question=card
        )
        return item, message

    def push_approval(
        self, conversation_id: str, action: str, detail: str, task_title: str = "", *, task_id: str = ""
    ) -> tuple[AttentionItem, MessageView]:
        """A task (or the chat, without a title) asks to be allowed: its item, and the card in the chat."""
        assert self.chat is not None, "push_approval needs the fake chat"
        lang = language_of(task_title or detail)
        item = self.add_approval(
            detail, task_title, task_id=task_id, conversation_id=conversation_id, lang=lang
        )
        if lang == "zh":
            text = f"需批准({'任务「' + task_title + '」' if task_title else '聊天'}):{action} `{detail}`"
        else:
            who = f"task “{task_title}”" if task_title else "chat"
            text = f"Approval needed ({who}): {action} `{detail}`"
        card = QuestionCard(split_item_id(item.id)[1], (), None, "open", kind="approval")
        message = self.chat.add_message(
            conversation_id, "assistant", text, task_id=item.task_id, question=card
        )
        return item, message

    def _resolve(self, item: AttentionItem, action: str, body: dict[str, Any]) -> None:
        kind, key = split_item_id(item.id)
        self._items.pop(item.id, None)
        if self.chat is not None and kind in ("question", "approval"):
            if action == "answer":
                answer = str(body.get("answer", "")).strip()
            else:
                answer = "approved" if action == "approve" else "denied"
            with contextlib.suppress(KeyError):  # not pushed into the chat: only the item goes
                self.chat.set_question(key, "answered", answer)
                return
        self._announce(item)

    def _next(self) -> int:
        self._count += 1
        return self._count

    def _announce(self, item: AttentionItem) -> None:
        self.bus.publish(TaskChanged(item.task_id or item.id))
