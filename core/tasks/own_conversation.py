"""A task started by hand (the desktop's 新任务, from the task list or the tray) gets a conversation of its
own, titled after the task: the request is stored there as the person's message and the result arrives
under it, while whatever conversation happened to be open gets nothing (docs/desktop.md#new-task)."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import ConversationsChanged
from core.chat.views import ConversationView
from core.store.database import Database
from core.store.models import ConversationRow, MessageRow
from core.tasks.titles import title_from
from core.tasks.views import TaskView


class ConversationMaker(Protocol):
    async def create_conversation(self, bot_id: str | None = None, title: str = "") -> ConversationView: ...


class TaskMaker(Protocol):
    async def create(
        self,
        *,
        bot_id: str | None,
        words: str,
        conversation_id: str | None = None,
        title: str = "",
        record_request: bool = False,
    ) -> TaskView: ...


async def start_in_own_conversation(
    db: Database,
    bus: EventBus,
    chat: ConversationMaker,
    tasks: TaskMaker,
    *,
    bot_id: str,
    title: str,
    words: str,
) -> TaskView:
    """Create a conversation of `bot_id` ('' = the default bot) titled after the task, then the task in it.

    A refused task (nothing to do, too many open tasks, the balance kept for chat) leaves no empty
    conversation behind: the one made for it is removed again before the refusal is raised."""
    title = title.strip() or title_from(words)
    conversation = await chat.create_conversation(bot_id or None, title)
    try:
        return await tasks.create(
            bot_id=conversation.bot_id,
            words=words,
            conversation_id=conversation.id,
            title=title,
            record_request=True,
        )
    except BaseException:
        await db.write(lambda s: _remove_unused(s, conversation.id))
        bus.publish(ConversationsChanged())
        raise


def _remove_unused(s: Session, conversation_id: str) -> None:
    # Only while nothing was said in it: a refused task's transaction wrote nothing there.
    said = s.scalar(select(MessageRow.id).where(MessageRow.conversation_id == conversation_id).limit(1))
    if said is None:
        s.execute(delete(ConversationRow).where(ConversationRow.id == conversation_id))
