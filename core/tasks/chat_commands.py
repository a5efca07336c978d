"""The chat agent's task tools (docs/architecture.md#the-local-api): task_start, task_message and task_list,
for one chat session.

Built when a chat session opens, with the chat's live turns, so a task started from a reply carries the
turn that started it (the chip under that reply)."""

from __future__ import annotations

from typing import Any

from core.agent.tool_api import ToolError
from core.chat.ports import LiveTurns
from core.errors import ConflictError, InvalidInputError
from core.store import conversations as conv_rows
from core.store import messages as msg_rows
from core.store import tasks as task_rows
from core.store.database import Database
from core.store.tasks import TaskRecord
from core.tasks.commands import TaskCommands
from core.tasks.reads import TaskReads


class TaskChatCommands:
    def __init__(self, db: Database, commands: TaskCommands, reads: TaskReads, live: LiveTurns) -> None:
        self._db = db
        self._commands = commands
        self._reads = reads
        self._live = live

    async def _chat_conversation(self, session_id: str) -> tuple[str, str]:
        conversation_id = session_id.removeprefix("chat-")
        record = await self._db.read(lambda s: conv_rows.get_conversation(s, conversation_id))
        if record is None:
            raise ToolError("task tools work only in a conversation")
        return record.id, record.bot_id

    async def start_from_chat(
        self,
        session_id: str,
        title: str,
        brief: str,
        budget_usd: float | None,
        acceptance: list[Any] | None = None,
        plan: bool = False,
    ) -> str:
        conversation_id, bot_id = await self._chat_conversation(session_id)
        request = await self._db.read(lambda s: msg_rows.last_user_message(s, conversation_id))
        words = request.text if request else brief
        turn = live.turn_id if (live := self._live.live_reply(conversation_id)) else None
        try:
            view = await self._commands.create(
                bot_id=bot_id,
                conversation_id=conversation_id,
                words=words,
                title=title,
                brief=brief,
                budget_usd=budget_usd,
                acceptance=acceptance,
                plan=plan,
                origin_message_id=request.id if request else 0,
                origin_ref=f"turn:{turn}" if turn else "",
            )
        except (ConflictError, InvalidInputError) as exc:
            raise ToolError(f"The task was not started: {exc.message} Tell the user.") from exc
        return (
            f"Started background task {view.id} 「{view.title}」. "
            "Tell the user in one sentence that you will do it "
            "in the background and report back; do not do the work here."
        )

    async def _resolve(self, bot_id: str, ref: str) -> TaskRecord:
        tasks = await self._db.read(lambda s: task_rows.list_tasks(s, bot_id=bot_id))
        exact = [t for t in tasks if ref in (t.id, t.title)]
        if not exact:
            exact = [t for t in tasks if ref.lower() in t.title.lower()]
        if len(exact) != 1:
            names = "; ".join(f"{t.id} 「{t.title}」" for t in tasks[:10]) or "none"
            reason = "no task matches" if not exact else "several tasks match"
            raise ToolError(f"{reason} {ref!r}. Open tasks: {names}. Use the task's id.")
        return exact[0]

    async def message_from_chat(self, session_id: str, task: str, text: str) -> str:
        _, bot_id = await self._chat_conversation(session_id)
        record = await self._resolve(bot_id, task)
        try:
            how = await self._commands.follow_up(record.id, text)
        except ConflictError as exc:
            raise ToolError(exc.message) from exc
        return {
            "steered": f"Passed to 「{record.title}」 while it works.",
            "queued": f"Queued for 「{record.title}」; it will read it when it starts.",
            "resumed": f"「{record.title}」 resumes with this.",
        }[how]

    async def list_for_chat(self, session_id: str) -> str:
        _, bot_id = await self._chat_conversation(session_id)
        views = await self._reads.list_tasks(bot_id=bot_id, groups=["working", "needs"], lang="en")
        if not views:
            return "No open background tasks."
        return "\n".join(f"{v.id} 「{v.title}」: {v.stage_label}. {v.latest_line}".strip() for v in views)
