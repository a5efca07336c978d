"""The `conversations` table: one chat thread with one bot, on one channel."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.store.errors import NotFoundError
from core.store.models import ConversationRow


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    id: str
    bot_id: str
    title: str
    channel: str
    created_at: float
    updated_at: float


def insert_conversation(
    s: Session, *, id: str, bot_id: str, title: str, now: float, channel: str = "desktop"
) -> ConversationRecord:
    row = ConversationRow(id=id, bot_id=bot_id, title=title, channel=channel, created_at=now, updated_at=now)
    s.add(row)
    s.flush()
    return _record(row)


def get_conversation(s: Session, id: str) -> ConversationRecord | None:
    row = s.get(ConversationRow, id)
    return None if row is None else _record(row)


def list_conversations(s: Session, bot_id: str | None = None) -> list[ConversationRecord]:
    """Most recently updated first."""
    stmt = select(ConversationRow)
    if bot_id is not None:
        stmt = stmt.where(ConversationRow.bot_id == bot_id)
    stmt = stmt.order_by(
        ConversationRow.updated_at.desc(), ConversationRow.created_at.desc(), ConversationRow.id
    )
    return [_record(row) for row in s.scalars(stmt)]


def touch_conversation(s: Session, id: str, now: float) -> None:
    """Mark activity, which moves the conversation to the top of the list."""
    _row(s, id).updated_at = now
    s.flush()


def rename_conversation(s: Session, id: str, title: str, now: float) -> ConversationRecord:
    row = _row(s, id)
    row.title = title
    row.updated_at = now
    s.flush()
    return _record(row)


def _row(s: Session, id: str) -> ConversationRow:
    row = s.get(ConversationRow, id)
    if row is None:
        raise NotFoundError("conversation", id)
    return row


def _record(row: ConversationRow) -> ConversationRecord:
    return ConversationRecord(
        id=row.id,
        bot_id=row.bot_id,
        title=row.title,
        channel=row.channel,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
