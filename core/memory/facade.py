"""The reads and commands the desktop uses for a bot's memory (docs/memory.md#the-ledger).
`MemoryService` implements it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from core.memory.views import MemoryView

if TYPE_CHECKING:  # named only: the window imports this before the store may load
    from core.store.memory import MemoryEntry


class MemoryFacade(Protocol):
    async def view(self, bot_id: str) -> MemoryView: ...

    async def add(self, bot_id: str, text: str) -> MemoryEntry:
        """InvalidInputError for empty or too long text; MemoryFullError (a ConflictError) without room."""
        ...

    async def edit(self, bot_id: str, entry_id: str, text: str) -> MemoryEntry:
        """New words for a note; a deleted note given words again comes back (撤销)."""
        ...

    async def delete(self, bot_id: str, entry_id: str) -> MemoryEntry:
        """The note as it was, so that 撤销 can give it back its words."""
        ...

    async def dismiss_full(self, bot_id: str) -> None: ...
