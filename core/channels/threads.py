"""Which of the person's messages a send answers, on platforms that reply under a message (Feishu's
threads, Telegram's replies): docs/channels.md#answers-and-follow-ups."""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.channels.channel import Outgoing
from core.store import messages as msg_rows
from core.store import tasks as task_rows


def reply_target(s: Session, conversation_id: str, outgoing: Outgoing | None) -> str:
    """The platform message to reply under: for a chat reply, the person's message it answers; for a task's
    push, the request that started the task. '' to post in the chat itself."""
    if outgoing is None:
        return ""
    if outgoing.task_id:
        task = task_rows.get_task(s, outgoing.task_id)
        origin = msg_rows.get_message(s, task.origin_message_id) if task and task.origin_message_id else None
        return origin.channel_ref if origin is not None and origin.role == "user" else ""
    if outgoing.purpose == "reply":
        request = msg_rows.platform_request_before(s, conversation_id, outgoing.message_id)
        return request.channel_ref if request is not None else ""
    return ""
