"""An in-memory AttentionFacade for UI tests and renders: tests add and remove needs-you items by hand, and
each change is announced with TaskChanged on the bus (the needs-you list changes whenever a task does).

`act` checks what the real service checks (the item exists, offers the action, takes the answer), records
every call in `acted`, and raises `act_error` when a test sets it. It doesn't resolve the item: the test
removes it, as the real cause going away would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from core.attention.items import (
    AttentionItem,
    approval_item,
    can,
    check_answer,
    failed_task_item,
    question_item,
)
from core.attention.routing import AnswerError
from core.bus import EventBus
from core.errors import ConflictError, NotFoundError, UnprocessableError
from core.events import TaskChanged
from tests.fakes.fake_chat import FakeChatFacade


class FakeAttentionFacade:
    def __init__(self, chat: FakeChatFacade | None = None, bus: EventBus | None = None) -> None:
        self.bus = bus or (chat.bus if chat is not None else EventBus())
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
        return {"done": action, "taskId": item.task_id, "conversationId": item.conversation_id}

    # -- driving it from a test ---------------------------------------------------------------------

    def add(self, item: AttentionItem) -> AttentionItem:
        """Add an item at the end (the service's order is the order they were added in)."""
        self._items[item.id] = item
        self._announce(item)
        return item

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

    def _next(self) -> int:
        self._count += 1
        return self._count

    def _announce(self, item: AttentionItem) -> None:
        self.bus.publish(TaskChanged(item.task_id or item.id))
