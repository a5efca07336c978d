"""Storage for chat channels against real SQLite files: migration 9, and a batch from a platform stored
with the cursor after it, once, across restarts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect
from sqlalchemy.orm import Session

from core.clock import FakeClock
from core.ids import new_id
from core.store import bots
from core.store import channels as channel_rows
from core.store.channels import Arrival
from core.store.database import Database, create_store_engine
from core.store.errors import NotFoundError
from core.store.migrations import MIGRATIONS, run_migrations
from tests.channel_store import new_wechat_channel

CHANNEL_TABLES = {"channels", "inbound_messages", "channel_peers"}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_store_engine(f"sqlite:///{tmp_path / 'm.db'}")
    yield eng
    eng.dispose()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=FakeClock())
    await database.open()
    yield database
    await database.close()


def arrival(n: int, *, peer: str = "u@im.wechat", token: str = "") -> Arrival:
    return Arrival(
        key=f"acc:{peer}:mid:{n}",
        peer=peer,
        platform_id=str(n),
        body={"text": f"message {n}"},
        reply_token=token,
    )


def test_migration_9_adds_the_channel_tables_to_a_version_8_database_and_keeps_its_data(
    engine: Engine,
) -> None:
    assert run_migrations(engine, now=1.0, migrations=MIGRATIONS[:8]) == list(range(1, 9))
    assert not set(inspect(engine).get_table_names()) & CHANNEL_TABLES
    with Session(engine) as s, s.begin():
        bot_id = bots.insert_bot(s, id=new_id("b"), name="Old", workspace="/ws", now=1.0).id

    assert run_migrations(engine, now=2.0, migrations=MIGRATIONS[:9]) == [9]
    assert set(inspect(engine).get_table_names()) >= CHANNEL_TABLES
    assert "source" in {c["name"] for c in inspect(engine).get_columns("messages")}
    assert "ix_messages_source" in {i["name"] for i in inspect(engine).get_indexes("messages")}
    with Session(engine) as s, s.begin():
        assert bots.get_bot(s, bot_id) is not None
        made = channel_rows.insert_channel(s, id="ch_1", bot_id=bot_id, kind="wechat", now=3.0)
        assert (made.status, made.cursor) == ("connecting", "")


async def test_a_batch_and_the_cursor_after_it_are_stored_together_and_a_redelivery_is_stored_once(
    db: Database,
) -> None:
    channel = await new_wechat_channel(db)
    first = await db.write(
        lambda s: channel_rows.store_batch(s, channel, [arrival(1), arrival(2)], cursor="c2", now=5.0)
    )
    assert [m.body["text"] for m in first] == ["message 1", "message 2"]

    # The platform sends message 2 again with a new one, and message 3 twice in the same batch.
    again = await db.write(
        lambda s: channel_rows.store_batch(
            s, channel, [arrival(2), arrival(3), arrival(3)], cursor="c3", now=6.0
        )
    )
    assert [m.platform_id for m in again] == ["3"]
    stored = await db.read(lambda s: channel_rows.get_channel(s, channel))
    assert stored is not None and stored.cursor == "c3"
    assert [m.platform_id for m in await db.read(lambda s: channel_rows.unhandled(s, channel))] == [
        "1",
        "2",
        "3",
    ]


async def test_a_batch_that_fails_to_store_leaves_the_cursor_where_it_was(db: Database) -> None:
    channel = await new_wechat_channel(db)
    await db.write(lambda s: channel_rows.store_batch(s, channel, [arrival(1)], cursor="c1", now=5.0))

    def crash_mid_batch(s: Session) -> None:
        channel_rows.store_batch(s, channel, [arrival(2)], cursor="c2", now=6.0)
        raise RuntimeError("the process died here")

    with pytest.raises(RuntimeError):
        await db.write(crash_mid_batch)
    stored = await db.read(lambda s: channel_rows.get_channel(s, channel))
    assert stored is not None and stored.cursor == "c1"  # so the platform sends message 2 again
    assert [m.platform_id for m in await db.read(lambda s: channel_rows.unhandled(s, channel))] == ["1"]


async def test_the_dedupe_and_the_cursor_survive_a_restart(tmp_path: Path) -> None:
    database = Database.for_data_dir(tmp_path / "data", clock=FakeClock())
    await database.open()
    channel = await new_wechat_channel(database)
    await database.write(lambda s: channel_rows.store_batch(s, channel, [arrival(1)], cursor="c1", now=5.0))
    await database.close()

    reopened = Database.for_data_dir(tmp_path / "data", clock=FakeClock())
    await reopened.open()
    try:
        again = await reopened.write(
            lambda s: channel_rows.store_batch(s, channel, [arrival(1)], cursor="c1", now=7.0)
        )
        assert again == []
        stored = await reopened.read(lambda s: channel_rows.get_channel(s, channel))
        assert stored is not None and stored.cursor == "c1"
    finally:
        await reopened.close()


async def test_a_handled_message_is_no_longer_owed_and_the_peer_keeps_its_latest_token(db: Database) -> None:
    channel = await new_wechat_channel(db)
    await db.write(
        lambda s: channel_rows.store_batch(
            s, channel, [arrival(1, token="ctx-1"), arrival(2, token="ctx-2"), arrival(3)], cursor="", now=5.0
        )
    )
    [one, two, three] = await db.read(lambda s: channel_rows.unhandled(s, channel))
    await db.write(lambda s: channel_rows.mark_handled(s, one.id, message_id=41, now=6.0))
    assert [m.id for m in await db.read(lambda s: channel_rows.unhandled(s, channel))] == [two.id, three.id]

    peer = await db.read(lambda s: channel_rows.get_peer(s, channel, "u@im.wechat"))
    assert peer is not None and (peer.reply_token, peer.last_inbound_at) == ("ctx-2", 5.0)  # 3 had none
    stored = await db.read(lambda s: channel_rows.get_channel(s, channel))
    assert stored is not None and stored.cursor == ""  # no cursor given: the old one kept


async def test_deleting_a_channel_takes_its_messages_and_peers_with_it(db: Database) -> None:
    channel = await new_wechat_channel(db)
    await db.write(
        lambda s: channel_rows.store_batch(s, channel, [arrival(1, token="t")], cursor="c1", now=5.0)
    )
    await db.write(lambda s: channel_rows.delete_channel(s, channel))
    assert await db.read(lambda s: channel_rows.get_channel(s, channel)) is None
    assert await db.read(lambda s: channel_rows.unhandled(s, channel)) == []
    assert await db.read(lambda s: channel_rows.get_peer(s, channel, "u@im.wechat")) is None
    with pytest.raises(NotFoundError):
        await db.write(lambda s: channel_rows.set_status(s, channel, "connected", now=6.0))
