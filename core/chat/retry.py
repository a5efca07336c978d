"""重试 on a failed chat reply (docs/chat.md#retrying-a-failed-reply): which reply can be asked again, and
the store's side of doing it.

A turn that failed at the model (a 500, a refused key) leaves the person's request at the end of the
session's history with no answer; retrying asks the model for that same request again (`AgentSession.resume`)
instead of saying the words a second time, so the model sees them once and the conversation keeps one copy.
Only the conversation's latest reply can be retried: once anything else was said, the request is no
longer the one the history ends with.

The failed reply's rows (its error, and any words it had streamed before failing) are removed as the
retry starts: the new reply takes their place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.chat.views import MessageView
from core.errors import ConflictError, NotFoundError
from core.store import messages as msg_rows
from core.store.messages import MessageRecord
from core.store.models import MessageRow


@dataclass(frozen=True, slots=True)
class FailedReply:
    conversation_id: str
    turn_id: str
    row_ids: tuple[int, ...]  # the reply's error and any partial words, all of one turn


def is_failed_reply(record: MessageRecord) -> bool:
    """A chat turn's failure (the red-dotted error); a background task's failure is not retried here."""
    return record.role == "error" and record.state == "error" and bool(record.turn_id) and not record.task_id


def retryable_id(records: Sequence[MessageRecord]) -> int | None:
    """The failed reply 重试 is offered on in this conversation (oldest-first `records`), if any: the error
    of the latest turn, with nothing but notices said after it."""
    for record in reversed(records):
        if record.role == "notice":
            continue
        return record.id if is_failed_reply(record) else None
    return None


def find_failed_reply(s: Session, conversation_id: str, message_id: int) -> FailedReply:
    """The failed reply `message_id` names, checked to be the one that can be retried now. Raises
    NotFoundError for no such message here, ConflictError for one that is not a failed reply or not the
    latest."""
    record = msg_rows.get_message(s, message_id)
    if record is None or record.conversation_id != conversation_id:
        raise NotFoundError("message", str(message_id))
    if not is_failed_reply(record):
        raise ConflictError(
            f"Message {message_id} is not a failed reply; only a reply that failed can be retried.",
            key="error.retry.not_failed",
        )
    later = s.scalars(
        select(MessageRow.id).where(
            MessageRow.conversation_id == conversation_id,
            MessageRow.id > message_id,
            MessageRow.role != "notice",
        )
    ).first()
    if later is not None:
        raise ConflictError(
            f"Message {message_id} is not the latest reply; only the latest failed reply can be retried "
            "(send the message again instead).",
            key="error.retry.not_latest",
        )
    rows = s.scalars(
        select(MessageRow.id).where(
            MessageRow.conversation_id == conversation_id,
            MessageRow.turn_id == record.turn_id,
            MessageRow.role.in_(("assistant", "error")),
            MessageRow.state == "error",
        )
    ).all()
    return FailedReply(conversation_id, record.turn_id, tuple(rows))


def replace_failed_reply(s: Session, failed: FailedReply, asked: Sequence[int]) -> None:
    """The retry started: the failed reply goes, and the person's messages it answered (`asked`, those of
    the request asked again) are owed an answer again, so a restart before the new reply is stored asks
    once more (docs/recovery.md)."""
    for row_id in failed.row_ids:
        row = s.get(MessageRow, row_id)
        if row is not None:
            s.delete(row)
    for message_id in asked:
        found = msg_rows.get_message(s, message_id)
        if found is not None and found.conversation_id == failed.conversation_id and found.role == "user":
            msg_rows.set_message_state(s, message_id, "taken")


def offer_retry(views: list[MessageView], message_id: int | None) -> list[MessageView]:
    """`views` with the retryable one (`retryable_id`) marked, for 重试 to show on it."""
    if message_id is None:
        return views
    return [replace(v, retryable=True) if v.id == message_id else v for v in views]
