"""The `memory_entries` and `memory_notebooks` tables: each bot's notes and whether its notebook filled up
(docs/memory.md). Only MemoryService writes them.

A deleted note keeps its row (`deleted_at`) for a while, so that the person's 撤销 can bring it back with
the same id, even after a restart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from core.store.models import (
    ConversationRow,
    MemoryEntryRow,
    MemoryNotebookRow,
    RuleRow,
    TaskRow,
)

# Where an entry came from: the bot, in a conversation, a task or a rule run; or the person, in the ledger.
SourceKind = Literal["conversation", "task", "rule", "person"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("conversation", "task", "rule", "person")
Author = Literal["bot", "person"]


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    id: str
    bot_id: str
    text: str
    source_kind: SourceKind
    source_id: str  # the conversation, task or rule; '' for the person's own
    source_title: str  # as it is called now; '' when it is gone
    created_at: float
    updated_at: float
    edited_by: Author  # who wrote the text as it stands


_TITLE_COLUMNS = {
    "conversation": (ConversationRow.id, ConversationRow.title),
    "task": (TaskRow.id, TaskRow.title),
    "rule": (RuleRow.id, RuleRow.title),
}


def live_entries(s: Session, bot_id: str) -> list[MemoryEntry]:
    """The bot's notes, oldest first, each with the title of where it came from as it is called now."""
    rows = list(
        s.scalars(
            select(MemoryEntryRow)
            .where(MemoryEntryRow.bot_id == bot_id, MemoryEntryRow.deleted_at.is_(None))
            .order_by(MemoryEntryRow.created_at, MemoryEntryRow.id)
        )
    )
    titles = _titles(s, rows)
    return [_entry(row, titles.get((row.source_kind, row.source_id), "")) for row in rows]


def entry_row(s: Session, bot_id: str, entry_id: str) -> MemoryEntryRow | None:
    """The row of a note, deleted or not."""
    row = s.get(MemoryEntryRow, entry_id)
    return row if row is not None and row.bot_id == bot_id else None


def entry_of(s: Session, row: MemoryEntryRow) -> MemoryEntry:
    return _entry(row, _titles(s, [row]).get((row.source_kind, row.source_id), ""))


def add_entry(
    s: Session,
    *,
    entry_id: str,
    bot_id: str,
    text: str,
    source_kind: SourceKind,
    source_id: str,
    author: Author,
    now: float,
) -> MemoryEntryRow:
    row = MemoryEntryRow(
        id=entry_id,
        bot_id=bot_id,
        text=text,
        source_kind=source_kind,
        source_id=source_id,
        created_at=now,
        updated_at=now,
        edited_by=author,
        deleted_at=None,
        deleted_by="",
    )
    s.add(row)
    s.flush()
    return row


def full_since(s: Session) -> Mapping[str, float]:
    """Bot id -> when a note was refused because its notebook was full, for each bot still full."""
    rows = s.scalars(select(MemoryNotebookRow).where(MemoryNotebookRow.full_since.is_not(None)))
    return {row.bot_id: cast(float, row.full_since) for row in rows}


def set_full(s: Session, bot_id: str, since: float | None) -> None:
    """Mark the notebook full since `since`, or not full (None)."""
    row = s.get(MemoryNotebookRow, bot_id)
    if row is None:
        s.add(MemoryNotebookRow(bot_id=bot_id, full_since=since))
    else:
        row.full_since = since


def purge_deleted(s: Session, before: float) -> int:
    """Forget for good the notes deleted before `before` (past the time 撤销 could want them)."""
    result = s.execute(
        delete(MemoryEntryRow).where(
            MemoryEntryRow.deleted_at.is_not(None), MemoryEntryRow.deleted_at < before
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)


def _titles(s: Session, rows: Iterable[MemoryEntryRow]) -> dict[tuple[str, str], str]:
    wanted: dict[str, set[str]] = {}
    for row in rows:
        if row.source_kind in _TITLE_COLUMNS and row.source_id:
            wanted.setdefault(row.source_kind, set()).add(row.source_id)
    found: dict[tuple[str, str], str] = {}
    for kind, ids in wanted.items():
        id_column, title_column = _TITLE_COLUMNS[kind]
        for found_id, title in s.execute(select(id_column, title_column).where(id_column.in_(ids))):
            found[(kind, found_id)] = title
    return found


def _entry(row: MemoryEntryRow, title: str) -> MemoryEntry:
    return MemoryEntry(
        id=row.id,
        bot_id=row.bot_id,
        text=row.text,
        source_kind=cast(SourceKind, row.source_kind),
        source_id=row.source_id,
        source_title=title,
        created_at=row.created_at,
        updated_at=row.updated_at,
        edited_by=cast(Author, row.edited_by),
    )
