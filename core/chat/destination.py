"""Which conversation background work (a task, a rule) belongs to: where it came from and where its
messages go."""

from __future__ import annotations

from core.bus import EventBus
from core.changes import ConversationsChanged
from core.clock import Clock
from core.errors import InvalidInputError, NotFoundError
from core.ids import new_id
from core.store import conversations as conv_rows
from core.store.database import Database


async def conversation_for(
    db: Database, bus: EventBus, clock: Clock, bot_id: str, conversation_id: str | None
) -> str:
    """The given conversation (it must be this bot's), else the bot's most recent one, else a new one."""
    if conversation_id:
        record = await db.read(lambda s: conv_rows.get_conversation(s, conversation_id))
        if record is None:
            raise NotFoundError("conversation", conversation_id)
        if record.bot_id != bot_id:
            raise InvalidInputError("conversationId", "belongs to another bot")
        return record.id
    existing = await db.read(lambda s: conv_rows.list_conversations(s, bot_id))
    if existing:
        return existing[0].id
    new = new_id("c")
    now = clock.time()
    await db.write(lambda s: conv_rows.insert_conversation(s, id=new, bot_id=bot_id, title="", now=now))
    bus.publish(ConversationsChanged())  # the sidebar shows the new conversation
    return new
