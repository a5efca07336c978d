"""A bot's memory: short notes it keeps across conversations and tasks, and the limits that keep the
notebook small enough to travel in every prompt (docs/memory.md).

Pure: what an entry is, which text may become one, when the notebook is full, and what the model reads of
it. No I/O, no clock.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store's types, named only: the window imports this before the store may load
    from core.store.memory import MemoryEntry, SourceKind

MAX_ENTRY_CHARS = 500
MAX_ENTRIES = 50
MAX_CHARS = 6_000  # all entries together: with ids and dates about 2,000 tokens in every request


@dataclass(frozen=True, slots=True)
class Usage:
    entries: int
    chars: int

    def room_for(self, chars: int) -> bool:
        return self.entries < MAX_ENTRIES and self.chars + chars <= MAX_CHARS


def usage_of(entries: Sequence[MemoryEntry]) -> Usage:
    return Usage(len(entries), sum(len(e.text) for e in entries))


def clean_text(text: str) -> str:
    """One note as it is kept: its lines joined, spaces collapsed."""
    return " ".join(text.split())


def text_problem(text: str) -> str | None:
    """Why `text` (already cleaned) cannot be an entry, worded to follow 'The note ...'; None when it can."""
    if not text:
        return "is empty; say what to remember"
    if len(text) > MAX_ENTRY_CHARS:
        return f"is {len(text)} characters, more than {MAX_ENTRY_CHARS}; keep one short fact per note"
    return None


def looks_secret(text: str) -> bool:
    """Whether the note holds what an export would hide (a key, a token, a password): kept, it would travel
    into every prompt and the ledger."""
    from core.export.redaction import redact  # its patterns take ~4 ms to build: not at start-up

    return redact(text) != text


def full_message(usage: Usage) -> str:
    return (
        f"the memory is full ({usage.entries} of {MAX_ENTRIES} notes, {usage.chars:,} of {MAX_CHARS:,} "
        "characters)"
    )


def source_of_session(session_id: str) -> tuple[SourceKind, str]:
    """Where a note the bot writes comes from, by its session's id (docs/domain.md#ids)."""
    if session_id.startswith("chat-"):
        return "conversation", session_id.removeprefix("chat-")
    if session_id.startswith("task-"):
        return "task", session_id.removeprefix("task-")
    if session_id.startswith("rule-"):
        return "rule", session_id.removeprefix("rule-").rpartition("-")[0]
    return "conversation", ""


_SECTION_HEAD = (
    "Your memory: notes you kept with `remember` in earlier conversations and tasks. The user can read, "
    "edit and delete them. A note may be out of date: check it before you rely on it, and when one is wrong "
    "or no longer matters, `forget` it by its id."
)


def memory_section(entries: Sequence[MemoryEntry]) -> str:
    """What the system prompt says of the notebook; empty when it holds nothing."""
    if not entries:
        return ""
    lines = [f"- [{e.id}] {e.text} ({_day(e.updated_at)})" for e in entries]
    return "\n".join([_SECTION_HEAD, *lines])


def _day(stamp: float) -> str:
    # A stored time formatted, not the clock read: the model learns how old a note is.
    return time.strftime("%Y-%m-%d", time.gmtime(stamp))
