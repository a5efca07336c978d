"""A bot's memory without a running host: what a session is given (no tools in an observing run), where a
note says it came from, and what a restart keeps: the notes, 撤销 of a delete, a full notebook; deleted
notes are forgotten for good after 30 days (docs/memory.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from core.agent.model_config import ModelConfig
from core.agent.sandbox import Permission, Preset
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import SessionKind
from core.bus import EventBus
from core.changes import AttentionChanged, MemoryChanged
from core.clock import FakeClock
from core.errors import NotFoundError
from core.memory.service import KEEP_DELETED, MemoryService
from core.store import bots as bot_rows
from core.store import conversations as conv_rows
from core.store.database import Database

NOW = 1_800_000_000.0
BOT = "b_0a1b2c3d4e5f"
CONVERSATION = "c_0a1b2c3d4e5f"


async def require_bot(bot_id: str) -> None:
    if bot_id != BOT:
        raise NotFoundError("bot", bot_id)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=NOW)


@pytest.fixture
async def db(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=clock)
    await database.open()

    def seed(s: Session) -> None:
        bot_rows.insert_bot(s, id=BOT, name="天天", workspace=str(tmp_path / "w"), now=NOW)
        conv_rows.insert_conversation(s, id=CONVERSATION, bot_id=BOT, title="周报", now=NOW)

    await database.write(seed)
    yield database
    await database.close()


def spec(session_id: str, kind: SessionKind = "chat", *, observing: bool = False) -> SessionSpec:
    return SessionSpec(
        session_id=session_id,
        kind=kind,
        bot_id=BOT,
        cwd=Path("/tmp"),
        model=ModelConfig("http://127.0.0.1:1/v1", "m"),
        permission=Permission(Preset.READ_ONLY, Path("/tmp")),
        observing=observing,
    )


async def test_an_observing_rule_run_reads_the_notebook_but_gets_no_tools(
    db: Database, clock: FakeClock
) -> None:
    memory = MemoryService(db, clock, EventBus(), require_bot=require_bot)
    await memory.add(BOT, "The user wants English.")
    acting = await memory.for_session(spec("rule-r_0a1b2c3d4e5f-1", "rule"))
    watching = await memory.for_session(spec("rule-r_0a1b2c3d4e5f-2", "rule", observing=True))
    assert [t.name for t in acting.tools()] == ["remember", "forget"]
    assert watching.tools() == ()
    assert "The user wants English." in watching.prompt_sections()[0]


async def test_a_note_names_where_it_came_from_and_the_sessions_see_it_at_their_next_request(
    db: Database, clock: FakeClock
) -> None:
    bus = EventBus()
    seen: list[object] = []
    bus.subscribe(seen.append)
    memory = MemoryService(db, clock, bus, require_bot=require_bot)
    session = await memory.for_session(spec(f"chat-{CONVERSATION}"))
    assert session.prompt_sections() == ()
    before = session.version()
    said = await memory.remember(BOT, f"chat-{CONVERSATION}", "Server: build-2")
    assert said.startswith("Remembered as m_")
    assert session.version() != before and "Server: build-2" in session.prompt_sections()[0]
    [entry] = await memory.entries(BOT)
    assert (entry.source_kind, entry.source_id, entry.source_title) == ("conversation", CONVERSATION, "周报")
    assert MemoryChanged(BOT) in seen


async def test_a_restart_keeps_the_notes_the_undo_of_a_delete_and_a_full_notebook(
    tmp_path: Path, db: Database, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("core.memory.notebook.MAX_ENTRIES", 1)
    memory = MemoryService(db, clock, EventBus(), require_bot=require_bot)
    kept = await memory.add(BOT, "Invoices on Fridays.")
    with pytest.raises(ValueError, match="memory is full"):
        await memory.remember(BOT, "task-t_0a1b2c3d4e5f", "Another fact.")
    gone = await memory.delete(BOT, kept.id)
    await memory.remember(BOT, "task-t_0a1b2c3d4e5f", "Another fact.")
    with pytest.raises(ValueError, match="memory is full"):
        await memory.remember(BOT, "task-t_0a1b2c3d4e5f", "A third fact.")

    bus = EventBus()
    seen: list[object] = []
    bus.subscribe(seen.append)
    again = MemoryService(db, clock, bus, require_bot=require_bot)  # what a new host reads
    assert [e.text for e in await again.entries(BOT)] == ["Another fact."]
    assert BOT in await again.full_bots()
    [other] = await again.entries(BOT)
    await again.delete(BOT, other.id)
    assert BOT not in await again.full_bots() and AttentionChanged() in seen
    back = await again.edit(BOT, gone.id, gone.text)  # 撤销, after the restart
    assert back.id == kept.id and back.created_at == kept.created_at


async def test_deleted_notes_are_forgotten_for_good_after_thirty_days(db: Database, clock: FakeClock) -> None:
    memory = MemoryService(db, clock, EventBus(), require_bot=require_bot)
    old = await memory.add(BOT, "Old fact.")
    await memory.delete(BOT, old.id)
    clock.advance(KEEP_DELETED - 60)
    assert await memory.purge() == 0
    recent = await memory.add(BOT, "Recent fact.")
    await memory.delete(BOT, recent.id)
    clock.advance(120)
    assert await memory.purge() == 1
    with pytest.raises(NotFoundError):
        await memory.edit(BOT, old.id, "Old fact.")
    assert (await memory.edit(BOT, recent.id, "Recent fact.")).id == recent.id


async def test_an_unknown_bot_is_not_found(db: Database, clock: FakeClock) -> None:
    memory = MemoryService(db, clock, EventBus(), require_bot=require_bot)
    with pytest.raises(NotFoundError):
        await memory.view("b_000000000000")
