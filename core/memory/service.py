"""Every bot's memory notebook: the notes it keeps with `remember` and `forget`, the person's edits in the
ledger, and what each session is told of it (docs/memory.md).

The notebook of a bot is read once and kept: this service is the only writer of its tables, so what it
holds is what the database holds. Each session's system prompt carries the notebook as it is at that
request, so a note kept in one conversation is known to the next one, and to any task started after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.changes import AttentionChanged, MemoryChanged
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.ids import new_id
from core.memory.notebook import (
    MAX_CHARS,
    MAX_ENTRIES,
    clean_text,
    full_message,
    looks_secret,
    memory_section,
    source_of_session,
    text_problem,
    usage_of,
)
from core.memory.views import MemoryView
from core.store import memory as rows
from core.store.memory import Author, MemoryEntry, SourceKind

if TYPE_CHECKING:
    from core.agent.session_spec import SessionSpec
    from core.agent.tool_api import ToolSpec
    from core.bus import EventBus
    from core.clock import Clock
    from core.store.database import Database

KEEP_DELETED = 30 * 86_400  # seconds a deleted note can still be brought back


class MemoryFullError(ConflictError):
    """No room for the note: the notebook holds MAX_ENTRIES notes or MAX_CHARS characters."""


@dataclass(frozen=True, slots=True)
class Notebook:
    entries: tuple[MemoryEntry, ...]
    revision: int


class MemoryService:
    def __init__(
        self, db: Database, clock: Clock, bus: EventBus, *, require_bot: Callable[[str], Awaitable[Any]]
    ) -> None:
        self._db = db
        self._clock = clock
        self._bus = bus
        self._require_bot = require_bot  # raises NotFoundError for an unknown bot
        self._notebooks: dict[str, Notebook] = {}
        self._full: dict[str, float] | None = None
        self._writing = asyncio.Lock()  # capacity is checked and the note written as one step
        self._revisions = 0

    # ---- reading ------------------------------------------------------------------------------------

    async def entries(self, bot_id: str) -> tuple[MemoryEntry, ...]:
        return (await self._notebook(bot_id)).entries

    def known(self, bot_id: str) -> Notebook:
        """The notebook as last read, without touching the database (sessions read it at every request)."""
        return self._notebooks.get(bot_id, Notebook((), 0))

    async def view(self, bot_id: str) -> MemoryView:
        await self._require_bot(bot_id)
        entries = await self.entries(bot_id)
        full = await self.full_bots()
        return MemoryView(bot_id, entries, usage_of(entries), full.get(bot_id))

    async def full_bots(self) -> Mapping[str, float]:
        """Bot id -> since when its notebook refused a note and nobody made room (a needs-you row)."""
        if self._full is None:
            self._full = dict(await self._db.read(rows.full_since))
        return dict(self._full)

    # ---- the person's ledger ------------------------------------------------------------------------

    async def add(self, bot_id: str, text: str) -> MemoryEntry:
        """A note the person writes themselves. InvalidInputError for empty or too long text,
        MemoryFullError when there is no room."""
        await self._require_bot(bot_id)
        cleaned = _checked(text)
        async with self._writing:
            entries = await self.entries(bot_id)
            same = next((e for e in entries if e.text == cleaned), None)
            if same is not None:
                return same
            if not usage_of(entries).room_for(len(cleaned)):
                raise _full_error(entries)
            return await self._insert(bot_id, cleaned, "person", "", "person")

    async def edit(self, bot_id: str, entry_id: str, text: str) -> MemoryEntry:
        """Change a note's words; a deleted note given its words again comes back (the ledger's 撤销)."""
        await self._require_bot(bot_id)
        cleaned = _checked(text)
        async with self._writing:
            entries = await self.entries(bot_id)
            if not await self._db.read(lambda s: rows.entry_row(s, bot_id, entry_id) is not None):
                raise NotFoundError("note", entry_id)
            live = any(e.id == entry_id for e in entries)  # else deleted: 撤销 brings it back
            others = [e for e in entries if e.id != entry_id]
            if not usage_of(others).room_for(len(cleaned)):
                raise _full_error(entries)
            now = self._clock.time()

            def write(s: Any) -> MemoryEntry:
                found = rows.entry_row(s, bot_id, entry_id)
                assert found is not None
                found.text = cleaned
                found.updated_at = now
                found.edited_by = "person"
                found.deleted_at = None
                found.deleted_by = ""
                return rows.entry_of(s, found)

            entry = await self._db.write(write)
            if live:
                await self._clear_full(bot_id)
            await self._reload(bot_id)
            return entry

    async def delete(self, bot_id: str, entry_id: str, *, by: Author = "person") -> MemoryEntry:
        """Delete a note; it can be brought back by `edit` for KEEP_DELETED. NotFoundError when there is
        no such note (or it is already deleted)."""
        await self._require_bot(bot_id)
        async with self._writing:
            now = self._clock.time()

            def write(s: Any) -> MemoryEntry | None:
                found = rows.entry_row(s, bot_id, entry_id)
                if found is None or found.deleted_at is not None:
                    return None
                found.deleted_at = now
                found.deleted_by = by
                return rows.entry_of(s, found)

            entry = await self._db.write(write)
            if entry is None:
                raise NotFoundError("note", entry_id)
            await self._clear_full(bot_id)  # there is room now
            await self._reload(bot_id)
            return entry

    async def dismiss_full(self, bot_id: str) -> None:
        """The person saw that the notebook is full and put the row away."""
        await self._clear_full(bot_id)

    async def purge(self) -> int:
        """At start-up: forget for good the notes deleted longer ago than KEEP_DELETED."""
        before = self._clock.time() - KEEP_DELETED
        return await self._db.write(lambda s: rows.purge_deleted(s, before))

    # ---- the bot's tools ----------------------------------------------------------------------------

    async def remember(self, bot_id: str, session_id: str, text: str) -> str:
        """`remember {text}`: what the tool answers the model. ValueError with what to do otherwise."""
        cleaned = clean_text(text)
        problem = text_problem(cleaned)
        if problem is not None:
            raise ValueError(f"The note {problem}.")
        if looks_secret(cleaned):
            raise ValueError(
                "The note looks like it holds a key or a token. Never keep secrets in memory; keep what the "
                "secret is for, without the secret."
            )
        kind, source_id = source_of_session(session_id)
        async with self._writing:
            entries = await self.entries(bot_id)
            same = next((e for e in entries if e.text == cleaned), None)
            if same is not None:
                return f"Already in your memory as {same.id}."
            usage = usage_of(entries)
            if not usage.room_for(len(cleaned)):
                await self._mark_full(bot_id)
                raise ValueError(
                    f"Not kept: {full_message(usage)}. The user has been told. Forget a note that no longer "
                    "matters and try again, or go on without it."
                )
            entry = await self._insert(bot_id, cleaned, kind, source_id, "bot")
        after = usage_of(self.known(bot_id).entries)
        said = f"Remembered as {entry.id}. The user can read and edit it."
        if after.entries >= MAX_ENTRIES * 0.8 or after.chars >= MAX_CHARS * 0.8:
            said += f" Your memory is nearly full ({after.entries} of {MAX_ENTRIES} notes)."
        return said

    async def forget(self, bot_id: str, entry_id: str) -> str:
        """`forget {id}`: what the tool answers the model. ValueError for an id not in the notebook."""
        if not any(e.id == entry_id for e in await self.entries(bot_id)):
            raise ValueError(
                f"There is no note {entry_id!r} in your memory; the ids are in the memory part of your "
                "instructions."
            )
        entry = await self.delete(bot_id, entry_id, by="bot")
        return f"Forgot {entry.id}: {entry.text}"

    # ---- sessions -----------------------------------------------------------------------------------

    async def for_session(self, spec: SessionSpec) -> SessionMemory:
        # Imported off the loop by Host.start (not on the way to the window, not inside a first turn).
        from core.memory.tools import memory_tools

        await self.entries(spec.bot_id)
        tools = [] if spec.observing else memory_tools(self, spec.bot_id)
        return SessionMemory(self, spec.bot_id, tools)

    # ---- inside -------------------------------------------------------------------------------------

    async def _notebook(self, bot_id: str) -> Notebook:
        found = self._notebooks.get(bot_id)
        if found is None:
            found = await self._reload(bot_id)
        return found

    async def _reload(self, bot_id: str) -> Notebook:
        entries = await self._db.read(lambda s: rows.live_entries(s, bot_id))
        before = self._notebooks.get(bot_id)
        self._revisions += 1
        notebook = Notebook(tuple(entries), self._revisions)
        self._notebooks[bot_id] = notebook
        if before is not None:
            self._bus.publish(MemoryChanged(bot_id))
        return notebook

    async def _insert(
        self, bot_id: str, text: str, kind: SourceKind, source_id: str, author: Author
    ) -> MemoryEntry:
        now = self._clock.time()
        entry_id = new_id("m")

        def write(s: Any) -> MemoryEntry:
            row = rows.add_entry(
                s,
                entry_id=entry_id,
                bot_id=bot_id,
                text=text,
                source_kind=kind,
                source_id=source_id,
                author=author,
                now=now,
            )
            return rows.entry_of(s, row)

        entry = await self._db.write(write)
        await self._reload(bot_id)
        return entry

    async def _mark_full(self, bot_id: str) -> None:
        full = await self.full_bots()
        if bot_id in full:
            return
        now = self._clock.time()
        await self._db.write(lambda s: rows.set_full(s, bot_id, now))
        assert self._full is not None
        self._full[bot_id] = now
        self._bus.publish(AttentionChanged())
        self._bus.publish(MemoryChanged(bot_id))

    async def _clear_full(self, bot_id: str) -> None:
        full = await self.full_bots()
        if bot_id not in full:
            return
        await self._db.write(lambda s: rows.set_full(s, bot_id, None))
        assert self._full is not None
        self._full.pop(bot_id, None)
        self._bus.publish(AttentionChanged())
        self._bus.publish(MemoryChanged(bot_id))


def _checked(text: str) -> str:
    cleaned = clean_text(text)
    problem = text_problem(cleaned)
    if problem is not None:
        raise InvalidInputError("text", problem)
    return cleaned


def _full_error(entries: Sequence[MemoryEntry]) -> MemoryFullError:
    usage = usage_of(entries)
    return MemoryFullError(
        f"{full_message(usage).capitalize()}; delete a note to make room.",
        key="error.memory.full",
        fields={"entries": usage.entries, "max_entries": MAX_ENTRIES, "max_chars": MAX_CHARS},
    )


class SessionMemory:
    """The `OutsideTools` of one session (core.agent.tool_api): `remember` and `forget` (none in an observing
    rule run), and the notebook in the system prompt as it is at each request."""

    def __init__(self, service: MemoryService, bot_id: str, tools: Sequence[ToolSpec]) -> None:
        self._service = service
        self._bot_id = bot_id
        self._tools = tuple(tools)
        self._section: tuple[int, tuple[str, ...]] | None = None

    def version(self) -> Hashable:
        return self._service.known(self._bot_id).revision

    def tools(self) -> Sequence[ToolSpec]:
        return self._tools

    def prompt_sections(self) -> Sequence[str]:
        notebook = self._service.known(self._bot_id)
        if self._section is None or self._section[0] != notebook.revision:
            section = memory_section(notebook.entries)
            self._section = (notebook.revision, (section,) if section else ())
        return self._section[1]

    async def settle(self, now: float) -> None:
        return None  # the service holds the notebook as written: nothing to wait for
