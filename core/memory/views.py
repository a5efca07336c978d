"""What the ledger and the API show of a bot's memory (docs/memory.md#the-ledger)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.memory.notebook import Usage

if TYPE_CHECKING:  # named only: the window imports this before the store may load
    from core.store.memory import MemoryEntry


@dataclass(frozen=True, slots=True)
class MemoryView:
    bot_id: str
    entries: tuple[MemoryEntry, ...]  # oldest first
    usage: Usage
    full_since: float | None  # a note was refused for want of room, and nobody has made room since
