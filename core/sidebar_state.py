"""Each bot's sidebar state (docs/attention.md#sidebar-state): its avatar ring and the one line under its
name.

`waiting` wins: something of the bot is on the needs-you list (「GPU 价格调研等你回答」, or 「3 件事等你」
when several wait). Else `working`: a task of it is in the working group or a chat reply of it streams
(「正在工作…」, or 「2 个任务进行中」). Else `idle`, with no line: nothing is drawn when healthy.

Derived on every read from what the task, attention and chat services already know; nothing is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from core.attention.items import AttentionItem
from core.bots.views import BotActivity
from core.chat.views import ConversationView
from core.tasks.views import TaskView
from core.translations import Language, as_language, text

# Kinds a person answers with a choice or words, and kinds they allow; other kinds say their own subject.
ANSWERED = ("question", "task_budget")
APPROVED = ("approval",)


class _Tasks(Protocol):
    async def list_tasks(
        self, *, bot_id: str | None = None, groups: list[str] | None = None, lang: Language = "zh"
    ) -> list[TaskView]: ...


class _Attention(Protocol):
    async def items(self, lang: Language = "zh") -> list[AttentionItem]: ...


class _Chat(Protocol):
    async def list_conversations(self) -> list[ConversationView]: ...


class _Bots(Protocol):
    async def names(self) -> dict[str, str]:
        """Bot id -> name, in the bots' order, without touching the keyring."""
        ...


def waiting_line(item: AttentionItem, titles: Mapping[str, str], lang: Language) -> str:
    """One waiting item in a few words: 「GPU 价格调研等你回答」, 「等你批准」 for a chat's own approval."""
    title = titles.get(item.task_id, "").strip() if item.task_id else ""
    if item.kind in ANSWERED:
        return text(lang, "sidebar.answer", title=title) if title else text(lang, "sidebar.answer_bare")
    if item.kind in APPROVED:
        return text(lang, "sidebar.approve", title=title) if title else text(lang, "sidebar.approve_bare")
    return " ".join(item.subject.split())


def bot_activity(
    bot_id: str,
    waiting: Sequence[AttentionItem],
    working_tasks: int,
    streaming: bool,
    titles: Mapping[str, str],
    lang: Language,
) -> BotActivity:
    if waiting:
        line = (
            waiting_line(waiting[0], titles, lang)
            if len(waiting) == 1
            else text(lang, "sidebar.several_waiting", count=len(waiting))
        )
        return BotActivity(bot_id, "waiting", line, len(waiting), working_tasks)
    if working_tasks or streaming:
        line = (
            text(lang, "sidebar.several_working", count=working_tasks)
            if working_tasks > 1
            else text(lang, "sidebar.working")
        )
        return BotActivity(bot_id, "working", line, 0, working_tasks)
    return BotActivity(bot_id, "idle")


class BotActivityReader:
    """`read(lang)` gives every bot's activity, in the bots' order."""

    def __init__(self, tasks: _Tasks, attention: _Attention, chat: _Chat, bots: _Bots) -> None:
        self._tasks = tasks
        self._attention = attention
        self._chat = chat
        self._bots = bots

    async def read(self, lang: str = "zh") -> list[BotActivity]:
        language = as_language(lang)
        names = await self._bots.names()
        items = await self._attention.items(lang=language)
        # Working and needs-you tasks name the waiting items (a question may come from a working task).
        tasks = await self._tasks.list_tasks(groups=["working", "needs"], lang=language)
        conversations = await self._chat.list_conversations()
        titles = {task.id: task.title for task in tasks}
        result = []
        for bot_id in names:
            waiting = [item for item in items if item.bot_id == bot_id]
            working = sum(1 for task in tasks if task.bot_id == bot_id and task.group == "working")
            streaming = any(c.busy for c in conversations if c.bot_id == bot_id)
            result.append(bot_activity(bot_id, waiting, working, streaming, titles, language))
        return result
