"""The storage layer against real SQLite files: engine set-up, migrations, the worker thread, repositories."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Connection, Engine, Integer, inspect, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from core.clock import FakeClock
from core.ids import new_id
from core.store import bots, conversations, messages, settings
from core.store.database import DB_FILE_NAME, WORKER_THREAD_PREFIX, Database, create_store_engine
from core.store.errors import NotFoundError
from core.store.migrations import (
    MIGRATIONS,
    Migration,
    SchemaTooNewError,
    add_column,
    current_version,
    run_migrations,
    schema_migrations,
)

LATEST = MIGRATIONS[-1].version
CHAT_TABLES = {"bots", "conversations", "messages", "settings"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"  # deliberately absent: opening must create it


@pytest.fixture
async def db(data_dir: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(data_dir, clock=clock)
    await database.open()
    yield database
    await database.close()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_store_engine(f"sqlite:///{tmp_path / 'm.db'}")
    yield eng
    eng.dispose()


def scalar(sql: str) -> Callable[[Session], object]:
    return lambda s: s.execute(text(sql)).scalar()


def add_bot(s: Session, *, now: float = 1.0, is_default: bool = False, name: str = "Bot") -> bots.BotRecord:
    return bots.insert_bot(
        s, id=new_id("b"), name=name, workspace="/home/u/errand/ws", now=now, is_default=is_default
    )


def add_conversation(s: Session, bot_id: str, *, now: float = 1.0, title: str = "Chat") -> str:
    return conversations.insert_conversation(s, id=new_id("c"), bot_id=bot_id, title=title, now=now).id


# -- engine and database ---------------------------------------------------------------------------


async def test_open_creates_the_file_with_wal_and_pragmas(db: Database, data_dir: Path) -> None:
    assert (data_dir / DB_FILE_NAME).is_file()
    assert await db.read(scalar("PRAGMA journal_mode")) == "wal"
    assert await db.read(scalar("PRAGMA foreign_keys")) == 1
    assert await db.read(scalar("PRAGMA synchronous")) == 1  # NORMAL
    assert await db.read(scalar("PRAGMA busy_timeout")) == 5000


async def test_reads_and_writes_run_on_the_worker_thread(db: Database) -> None:
    loop_thread = threading.current_thread().name

    def where(_s: Session) -> str:
        return threading.current_thread().name

    write_threads = await asyncio.gather(*(db.write(where) for _ in range(5)))
    read_thread = await db.read(where)

    assert len(set(write_threads)) == 1
    assert write_threads[0] == read_thread
    assert read_thread.startswith(WORKER_THREAD_PREFIX)
    assert read_thread != loop_thread


async def test_concurrent_writes_are_all_committed(db: Database) -> None:
    async def insert(n: int) -> None:
        await db.write(lambda s: settings.set_setting(s, f"k{n}", n, now=1.0))

    await asyncio.gather(*(insert(n) for n in range(20)))

    assert await db.read(lambda s: [settings.get_setting(s, f"k{n}") for n in range(20)]) == list(range(20))


async def test_a_failing_write_rolls_back_and_reraises(db: Database) -> None:
    bot_id = new_id("b")

    def insert_then_fail(s: Session) -> None:
        bots.insert_bot(s, id=bot_id, name="Lost", workspace="/ws", now=1.0)
        settings.set_setting(s, "lost", True, now=1.0)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await db.write(insert_then_fail)

    assert await db.read(lambda s: bots.get_bot(s, bot_id)) is None
    assert await db.read(lambda s: settings.get_setting(s, "lost", "absent")) == "absent"


async def test_data_survives_close_and_reopen(data_dir: Path, clock: FakeClock) -> None:
    first = Database.for_data_dir(data_dir, clock=clock)
    await first.open()
    bot = await first.write(lambda s: add_bot(s, is_default=True))
    await first.close()

    second = Database.for_data_dir(data_dir, clock=clock)
    await second.open()
    try:
        assert await second.read(lambda s: bots.get_bot(s, bot.id)) == bot
    finally:
        await second.close()


async def test_close_lets_queued_writes_finish(data_dir: Path, clock: FakeClock) -> None:
    database = Database.for_data_dir(data_dir, clock=clock)
    await database.open()

    def put(n: int) -> Callable[[Session], None]:
        return lambda s: settings.set_setting(s, f"k{n}", n, 1.0)

    writes = [database.write(put(n)) for n in range(10)]
    # gather starts its tasks in order, so every write is queued on the worker before close() runs.
    await asyncio.gather(*writes, database.close())

    reopened = Database.for_data_dir(data_dir, clock=clock)
    await reopened.open()
    try:
        assert await reopened.read(lambda s: [settings.get_setting(s, f"k{n}") for n in range(10)]) == list(
            range(10)
        )
    finally:
        await reopened.close()


async def test_use_before_open_or_after_close_is_refused(data_dir: Path) -> None:
    database = Database.for_data_dir(data_dir)
    with pytest.raises(RuntimeError, match="not open"):
        await database.read(scalar("SELECT 1"))
    await database.open()
    await database.close()
    await database.close()  # twice is fine
    with pytest.raises(RuntimeError, match="not open"):
        await database.write(scalar("SELECT 1"))
    with pytest.raises(RuntimeError, match="cannot be opened"):
        await database.open()


async def test_sync_variants_refuse_to_block_the_loop_or_the_worker(db: Database) -> None:
    with pytest.raises(RuntimeError, match="block the running event loop"):
        db.read_sync(scalar("SELECT 1"))

    def nested(_s: Session) -> object:
        return db.write_sync(scalar("SELECT 1"))

    with pytest.raises(RuntimeError, match="wait for itself"):
        await db.write(nested)


def test_sync_variants_work_without_a_loop(data_dir: Path, clock: FakeClock) -> None:
    database = Database.for_data_dir(data_dir, clock=clock)
    database.open_sync()
    try:
        bot = database.write_sync(add_bot)
        assert database.read_sync(lambda s: bots.get_bot(s, bot.id)) == bot
        assert database.read_sync(scalar("PRAGMA journal_mode")) == "wal"
    finally:
        database.close_sync()


# -- migrations ------------------------------------------------------------------------------------


async def test_migrations_create_the_tables_and_record_the_version(db: Database, clock: FakeClock) -> None:
    tables = await db.read(lambda s: set(inspect(s.connection()).get_table_names()))
    assert tables >= CHAT_TABLES | {"schema_migrations"}

    rows = await db.read(lambda s: s.execute(select(schema_migrations)).all())
    assert [(r.version, r.applied_at) for r in rows] == [(m.version, clock.time()) for m in MIGRATIONS]


def test_running_migrations_twice_is_a_no_op(engine: Engine) -> None:
    assert run_migrations(engine, now=1.0) == [m.version for m in MIGRATIONS]
    assert run_migrations(engine, now=2.0) == []
    with engine.connect() as conn:
        assert current_version(conn) == LATEST
        assert conn.execute(select(schema_migrations.c.applied_at)).scalars().all() == [1.0] * LATEST


async def test_a_newer_schema_is_refused_with_a_clear_message(data_dir: Path) -> None:
    db = Database.for_data_dir(data_dir)
    await db.open()
    await db.write(lambda s: s.execute(schema_migrations.insert().values(version=LATEST + 5, applied_at=0.0)))
    await db.close()

    newer = Database.for_data_dir(data_dir)
    with pytest.raises(SchemaTooNewError) as raised:
        await newer.open()

    assert str(raised.value) == (
        f"this data dir was written by a newer Errand (schema {LATEST + 5} > {LATEST}); upgrade Errand"
    )
    with pytest.raises(RuntimeError, match="not open"):
        await newer.read(scalar("SELECT 1"))
    await newer.close()  # a failed open left nothing to close; still harmless


def test_a_failing_migration_leaves_the_previous_version_intact(engine: Engine) -> None:
    def half_then_fail(conn: Connection) -> None:
        conn.exec_driver_sql("CREATE TABLE half_done (id INTEGER PRIMARY KEY)")
        add_column(conn, "bots", Column("half_col", Integer, nullable=False, server_default="0"))
        raise RuntimeError("migration failed midway")

    broken = [*MIGRATIONS, Migration(LATEST + 1, "fails midway", half_then_fail)]
    with pytest.raises(RuntimeError, match="midway"):
        run_migrations(engine, now=1.0, migrations=broken)

    with engine.connect() as conn:
        assert current_version(conn) == LATEST
        assert not inspect(conn).has_table("half_done")
        assert "half_col" not in {c["name"] for c in inspect(conn).get_columns("bots")}


def test_an_appended_migration_runs_once_and_add_column_skips_existing_columns(engine: Engine) -> None:
    run_migrations(engine, now=1.0)

    def add_extra(conn: Connection) -> None:
        add_column(conn, "settings", Column("extra", Integer, nullable=False, server_default="7"))
        add_column(conn, "settings", Column("extra", Integer, nullable=False, server_default="7"))

    extended = [*MIGRATIONS, Migration(LATEST + 1, "settings.extra", add_extra)]
    assert run_migrations(engine, now=2.0, migrations=extended) == [LATEST + 1]
    assert run_migrations(engine, now=3.0, migrations=extended) == []
    with engine.connect() as conn:
        assert "extra" in {c["name"] for c in inspect(conn).get_columns("settings")}


def test_migration_versions_must_run_one_two_three(engine: Engine) -> None:
    def nothing(_conn: Connection) -> None:
        pass

    with pytest.raises(ValueError, match="in order"):
        run_migrations(engine, now=1.0, migrations=[Migration(1, "a", nothing), Migration(3, "c", nothing)])


# -- bots ------------------------------------------------------------------------------------------


async def test_bots_round_trip_with_the_default_first(db: Database) -> None:
    older = await db.write(lambda s: add_bot(s, now=1.0, name="Older"))
    default = await db.write(
        lambda s: bots.insert_bot(
            s,
            id=new_id("b"),
            name="Main",
            workspace="/home/u/main",
            now=2.0,
            model_base_url="http://127.0.0.1:9/v1",
            model_name="deepseek-chat",
            api_key_ref="errand/main",
            preset="read-only",
            is_default=True,
        )
    )
    newer = await db.write(lambda s: add_bot(s, now=3.0, name="Newer"))

    assert await db.read(bots.list_bots) == [default, older, newer]
    assert await db.read(bots.default_bot) == default
    got = await db.read(lambda s: bots.get_bot(s, default.id))
    assert got == default
    assert (got.model_provider, got.model_base_url, got.model_name) == (
        "openai",
        "http://127.0.0.1:9/v1",
        "deepseek-chat",
    )
    assert (got.api_key_ref, got.preset) == ("errand/main", "read-only")
    assert (got.created_at, got.updated_at) == (2.0, 2.0)
    assert (older.model_provider, older.preset, older.is_default) == ("openai", "workspace-write", False)
    assert await db.read(lambda s: bots.get_bot(s, "b_missing")) is None


async def test_update_bot_changes_fields_and_moves_the_default(db: Database) -> None:
    first = await db.write(lambda s: add_bot(s, now=1.0, is_default=True))
    second = await db.write(lambda s: add_bot(s, now=2.0))

    updated = await db.write(
        lambda s: bots.update_bot(s, second.id, now=5.0, name="Renamed", model_name="m2", is_default=True)
    )

    assert (updated.name, updated.model_name, updated.is_default) == ("Renamed", "m2", True)
    assert (updated.created_at, updated.updated_at) == (2.0, 5.0)
    assert await db.read(bots.default_bot) == updated
    demoted = await db.read(lambda s: bots.get_bot(s, first.id))
    assert demoted is not None
    assert not demoted.is_default


async def test_update_bot_with_an_unknown_field_raises_and_changes_nothing(db: Database) -> None:
    bot = await db.write(add_bot)

    with pytest.raises(ValueError, match="created_at"):
        await db.write(lambda s: bots.update_bot(s, bot.id, now=9.0, name="X", created_at=0.0))  # type: ignore[call-arg]

    assert await db.read(lambda s: bots.get_bot(s, bot.id)) == bot


async def test_bot_workspace_must_be_absolute_and_missing_bots_are_reported(db: Database) -> None:
    with pytest.raises(ValueError, match="absolute"):
        await db.write(lambda s: bots.insert_bot(s, id=new_id("b"), name="B", workspace="rel/ws", now=1.0))
    with pytest.raises(NotFoundError, match="b_missing"):
        await db.write(lambda s: bots.update_bot(s, "b_missing", now=1.0, name="X"))
    assert await db.read(bots.list_bots) == []


# -- conversations ---------------------------------------------------------------------------------


async def test_conversations_round_trip_newest_activity_first(db: Database) -> None:
    bot_a = await db.write(add_bot)
    bot_b = await db.write(add_bot)
    c1 = await db.write(lambda s: add_conversation(s, bot_a.id, now=1.0, title="one"))
    c2 = await db.write(lambda s: add_conversation(s, bot_a.id, now=2.0, title="two"))
    c3 = await db.write(
        lambda s: (
            conversations.insert_conversation(
                s, id=new_id("c"), bot_id=bot_b.id, title="three", now=3.0, channel="telegram"
            ).id
        )
    )

    assert [c.id for c in await db.read(conversations.list_conversations)] == [c3, c2, c1]
    assert [c.id for c in await db.read(lambda s: conversations.list_conversations(s, bot_a.id))] == [c2, c1]

    await db.write(lambda s: conversations.touch_conversation(s, c1, 10.0))
    assert [c.id for c in await db.read(conversations.list_conversations)] == [c1, c3, c2]
    renamed = await db.write(lambda s: conversations.rename_conversation(s, c2, "deux", 11.0))
    assert [c.id for c in await db.read(conversations.list_conversations)] == [c2, c1, c3]

    assert (renamed.title, renamed.created_at, renamed.updated_at) == ("deux", 2.0, 11.0)
    got = await db.read(lambda s: conversations.get_conversation(s, c1))
    assert got == conversations.ConversationRecord(
        id=c1, bot_id=bot_a.id, title="one", channel="desktop", created_at=1.0, updated_at=10.0
    )
    third = await db.read(lambda s: conversations.get_conversation(s, c3))
    assert third is not None
    assert third.channel == "telegram"
    assert await db.read(lambda s: conversations.get_conversation(s, "c_missing")) is None
    with pytest.raises(NotFoundError):
        await db.write(lambda s: conversations.touch_conversation(s, "c_missing", 1.0))


async def test_foreign_keys_are_enforced(db: Database) -> None:
    with pytest.raises(IntegrityError):
        await db.write(lambda s: add_conversation(s, "b_does_not_exist"))
    assert await db.read(conversations.list_conversations) == []


# -- messages --------------------------------------------------------------------------------------


async def conversation(db: Database) -> str:
    bot = await db.write(add_bot)
    return await db.write(lambda s: add_conversation(s, bot.id))


async def test_messages_round_trip_with_activity_json(db: Database) -> None:
    conv = await conversation(db)
    steps: list[dict[str, object]] = [
        {"kind": "model", "title": "思考", "tokens_in": 12, "ok": True},
        {"kind": "tool", "title": "bash ls", "detail": "a\nb", "duration_ms": 40, "ok": False},
    ]

    stored = await db.write(
        lambda s: messages.insert_message(
            s,
            conversation_id=conv,
            role="assistant",
            text="完成了",
            state="done",
            now=4.5,
            turn_id="turn-1",
            model="deepseek-chat",
            tokens_in=120,
            tokens_out=30,
            duration_ms=900,
            activity=steps,
        )
    )
    plain = await db.write(
        lambda s: messages.insert_message(
            s, conversation_id=conv, role="user", text="hi", state="queued", now=5.0
        )
    )

    got = await db.read(lambda s: messages.get_message(s, stored.id))
    assert got == stored
    assert got == messages.MessageRecord(
        id=stored.id,
        conversation_id=conv,
        role="assistant",
        text="完成了",
        state="done",
        input_id="",
        turn_id="turn-1",
        model="deepseek-chat",
        tokens_in=120,
        tokens_out=30,
        duration_ms=900,
        activity=steps,
        created_at=4.5,
    )
    assert plain.activity == []
    assert plain.id > stored.id
    raw = await db.read(scalar(f"SELECT activity FROM messages WHERE id = {stored.id}"))
    assert isinstance(raw, str)
    assert "思考" in raw  # stored as readable JSON text, not \u escapes


async def test_list_messages_pages_oldest_first(db: Database) -> None:
    conv = await conversation(db)
    other = await conversation(db)

    def say(conv_id: str, n: int) -> Callable[[Session], int]:
        return lambda s: (
            messages.insert_message(
                s, conversation_id=conv_id, role="user", text=f"m{n}", state="done", now=float(n)
            ).id
        )

    ids = [await db.write(say(conv, n)) for n in range(6)]
    await db.write(say(other, 99))

    def texts(records: list[messages.MessageRecord]) -> list[str]:
        return [m.text for m in records]

    assert texts(await db.read(lambda s: messages.list_messages(s, conv))) == [f"m{n}" for n in range(6)]
    assert texts(await db.read(lambda s: messages.list_messages(s, conv, limit=2))) == ["m4", "m5"]
    page = await db.read(lambda s: messages.list_messages(s, conv, limit=2, before_id=ids[4]))
    assert texts(page) == ["m2", "m3"]
    assert texts(await db.read(lambda s: messages.list_messages(s, conv, before_id=ids[2]))) == ["m0", "m1"]
    last = await db.read(lambda s: messages.last_message(s, conv))
    assert last is not None
    assert last.text == "m5"
    assert await db.read(lambda s: messages.last_message(s, "c_empty")) is None


async def test_message_states_input_ids_and_unanswered_user_messages(db: Database) -> None:
    conv_a = await conversation(db)
    conv_b = await conversation(db)

    def user(s: Session, conv_id: str, text_: str, state: messages.MessageState, input_id: str = "") -> int:
        return messages.insert_message(
            s, conversation_id=conv_id, role="user", text=text_, state=state, now=1.0, input_id=input_id
        ).id

    first = await db.write(lambda s: user(s, conv_a, "first", "queued", "in-1"))
    await db.write(lambda s: user(s, conv_a, "answered", "answered"))
    second = await db.write(lambda s: user(s, conv_b, "second", "taken", "in-2"))
    await db.write(
        lambda s: messages.insert_message(
            s, conversation_id=conv_b, role="notice", text="n", state="queued", now=1.0
        )
    )
    third = await db.write(lambda s: user(s, conv_a, "third", "queued"))

    pending = await db.read(messages.unanswered_user_messages)
    assert [m.id for m in pending] == [first, second, third]

    taken = await db.write(lambda s: messages.set_message_state(s, first, "taken"))
    assert taken.state == "taken"
    await db.write(lambda s: messages.set_message_state(s, second, "answered"))
    assert [m.id for m in await db.read(messages.unanswered_user_messages)] == [first, third]

    found = await db.read(lambda s: messages.find_by_input_id(s, "in-2"))
    assert found is not None
    assert (found.id, found.state) == (second, "answered")
    handed_over = await db.write(lambda s: messages.set_input_id(s, third, f"m{third}"))
    assert handed_over.input_id == f"m{third}"
    assert await db.read(lambda s: messages.find_by_input_id(s, f"m{third}")) == handed_over
    assert await db.read(lambda s: messages.find_by_input_id(s, "in-none")) is None
    assert await db.read(lambda s: messages.find_by_input_id(s, "")) is None
    with pytest.raises(NotFoundError):
        await db.write(lambda s: messages.set_message_state(s, 10_000, "done"))


async def test_unknown_message_roles_and_states_are_refused(db: Database) -> None:
    conv = await conversation(db)
    # Typed as Any, as values arriving from JSON are: the Literal types cannot catch them statically.
    system: Any = "system"
    sent: Any = "sent"
    with pytest.raises(ValueError, match="role"):
        await db.write(
            lambda s: messages.insert_message(
                s, conversation_id=conv, role=system, text="x", state="done", now=1.0
            )
        )
    with pytest.raises(ValueError, match="state"):
        await db.write(
            lambda s: messages.insert_message(
                s, conversation_id=conv, role="user", text="x", state=sent, now=1.0
            )
        )
    with pytest.raises(ValueError, match="state"):
        await db.write(lambda s: messages.set_message_state(s, 1, sent))
    assert await db.read(lambda s: messages.list_messages(s, conv)) == []


# -- settings --------------------------------------------------------------------------------------


async def test_settings_store_json_values(db: Database) -> None:
    assert await db.read(lambda s: settings.get_setting(s, "theme")) is None
    assert await db.read(lambda s: settings.get_setting(s, "theme", "light")) == "light"

    value: settings.JsonValue = {"langs": ["zh_CN", "en"], "budget": 2.5, "on": True, "none": None}
    await db.write(lambda s: settings.set_setting(s, "prefs", value, now=1.0))
    await db.write(lambda s: settings.set_setting(s, "theme", "dark", now=1.0))
    await db.write(lambda s: settings.set_setting(s, "theme", "系统", now=2.0))

    assert await db.read(lambda s: settings.get_setting(s, "prefs")) == value
    assert await db.read(lambda s: settings.get_setting(s, "theme")) == "系统"
    with pytest.raises(ValueError):
        await db.write(lambda s: settings.set_setting(s, "bad", float("nan"), now=3.0))
