"""Looking for words in what was said (messages), in tasks (title, brief) and in rules (title, instruction).

Every word of the query must be in one item, anywhere, in any case. On SQLite with the trigram index
(migration 14) a word of 3 or more characters is looked up in it; shorter words, and every word on a
database without the index (PostgreSQL, an old SQLite), are matched with LIKE, which finds the same rows by
reading them all. The query is never spliced into SQL or FTS syntax: each word is a bound parameter, and in
an FTS expression a quoted string with its quotes doubled, so `"`, `*`, `AND` or `(` are just characters.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from sqlalchemy import ColumnElement, Select, TextClause, bindparam, or_, select, text
from sqlalchemy.orm import InstrumentedAttribute, Session

from core.store.migrations import SEARCH_TABLES
from core.store.models import ConversationRow, MessageRow, RuleRow, TaskRow

_R = TypeVar("_R", TaskRow, RuleRow)

HitKind = Literal["message", "task", "rule"]
# Trigrams: a word shorter than this has none, so the index cannot find it.
MIN_INDEXED_CHARS = 3
MAX_WORDS = 8
MAX_QUERY_CHARS = 200
# What the person never looks for: a model's failure words.
UNSEARCHED_ROLES = ("error",)


@dataclass(frozen=True, slots=True)
class StoredHit:
    kind: HitKind
    title: str  # the conversation's, the task's or the rule's
    text: str  # the message's text, the task's brief or the rule's instruction
    at: float  # when it was said, or last changed
    bot_id: str
    conversation_id: str = ""
    message_id: int = 0
    task_id: str = ""
    rule_id: str = ""


def query_words(query: str) -> list[str]:
    """The words looked for: split on whitespace, at most MAX_WORDS, the query cut to MAX_QUERY_CHARS.
    Control characters separate words like spaces do: a NUL would end a LIKE pattern early in SQLite, so
    that it matched everything."""
    cleaned = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in query[:MAX_QUERY_CHARS])
    return cleaned.split()[:MAX_WORDS]


def has_index(s: Session) -> bool:
    """Whether migration 14 built the trigram index here (only on a SQLite that has the tokenizer)."""
    if s.get_bind().dialect.name != "sqlite":
        return False
    names = s.execute(
        text("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN :names").bindparams(
            bindparam("names", expanding=True)
        ),
        {"names": list(SEARCH_TABLES)},
    ).scalars()
    return set(names) == set(SEARCH_TABLES)


def search(s: Session, query: str, *, limit: int, indexed: bool) -> list[StoredHit]:
    """Messages, tasks and rules holding every word of `query`, the newest first, at most `limit`."""
    words = query_words(query)
    if not words or limit <= 0:
        return []
    hits = [
        *_messages(s, words, limit, indexed),
        *_tasks(s, words, limit, indexed),
        *_rules(s, words, limit, indexed),
    ]
    hits.sort(key=lambda hit: hit.at, reverse=True)
    return hits[:limit]


def fts_phrase(word: str) -> str:
    """One word as an FTS5 string: quoted, its own quotes doubled, so no character of it is syntax."""
    return '"' + word.replace('"', '""') + '"'


def like_pattern(word: str) -> str:
    r"""`%word%` for LIKE ... ESCAPE '\', with the word's own %, _ and \ taken literally."""
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _split(words: list[str], indexed: bool) -> tuple[list[str], list[str]]:
    """(words the index looks up, words LIKE matches)."""
    if not indexed:
        return [], words
    return [w for w in words if len(w) >= MIN_INDEXED_CHARS], [w for w in words if len(w) < MIN_INDEXED_CHARS]


def _likes(words: list[str], *columns: InstrumentedAttribute[str]) -> list[ColumnElement[bool]]:
    return [or_(*(column.ilike(like_pattern(word), escape="\\") for column in columns)) for word in words]


def _found_in(table: str, id_column: str, words: list[str]) -> Select[tuple[object]]:
    """The ids the index `table` finds for `words`. The names are ours (SEARCH_TABLES), never the person's;
    the words go in as one bound parameter."""
    match: TextClause = text(f"{table} MATCH :match").bindparams(
        match=" AND ".join(fts_phrase(w) for w in words)
    )
    return select(text(id_column)).select_from(text(table)).where(match)


def _messages(s: Session, words: list[str], limit: int, indexed: bool) -> list[StoredHit]:
    looked_up, liked = _split(words, indexed)
    stmt = (
        select(MessageRow, ConversationRow.title, ConversationRow.bot_id)
        .join(ConversationRow, ConversationRow.id == MessageRow.conversation_id)
        .where(MessageRow.role.not_in(UNSEARCHED_ROLES), *_likes(liked, MessageRow.text))
    )
    if looked_up:
        stmt = stmt.where(MessageRow.id.in_(_found_in("search_messages", "rowid", looked_up)))
    rows = s.execute(stmt.order_by(MessageRow.id.desc()).limit(limit)).all()
    return [
        StoredHit(
            kind="message",
            title=title,
            text=row.text,
            at=row.created_at,
            bot_id=bot_id,
            conversation_id=row.conversation_id,
            message_id=row.id,
        )
        for row, title, bot_id in rows
    ]


def _newest_matching(
    s: Session,
    row_type: type[_R],
    body: InstrumentedAttribute[str],
    index: tuple[str, str],
    words: list[str],
    limit: int,
    indexed: bool,
) -> Sequence[_R]:
    """Tasks or rules whose title or `body` hold every word, newest first: through the index
    `(table, key)` where it serves, LIKE for the rest."""
    looked_up, liked = _split(words, indexed)
    stmt = select(row_type).where(*_likes(liked, row_type.title, body))
    if looked_up:
        stmt = stmt.where(row_type.id.in_(_found_in(*index, looked_up)))
    return s.scalars(stmt.order_by(row_type.updated_at.desc()).limit(limit)).all()


def _tasks(s: Session, words: list[str], limit: int, indexed: bool) -> list[StoredHit]:
    rows = _newest_matching(s, TaskRow, TaskRow.brief, ("search_tasks", "task_id"), words, limit, indexed)
    return [
        StoredHit(
            kind="task",
            title=row.title,
            text=row.brief,
            at=row.updated_at,
            bot_id=row.bot_id,
            conversation_id=row.conversation_id,
            task_id=row.id,
        )
        for row in rows
    ]


def _rules(s: Session, words: list[str], limit: int, indexed: bool) -> list[StoredHit]:
    rows = _newest_matching(
        s, RuleRow, RuleRow.instruction, ("search_rules", "rule_id"), words, limit, indexed
    )
    return [
        StoredHit(
            kind="rule",
            title=row.title,
            text=row.instruction,
            at=row.updated_at,
            bot_id=row.bot_id,
            conversation_id=row.conversation_id,
            rule_id=row.id,
        )
        for row in rows
    ]
