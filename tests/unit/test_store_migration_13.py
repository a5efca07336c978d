"""Migration 13: messages.rule_id, added to a version-12 database; old messages read as sent by no rule."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from core.store import bots, conversations
from core.store.database import create_store_engine
from core.store.migrations import MIGRATIONS, run_migrations
from core.store.models import MessageRow
from tests.unit.old_store import store_before_column


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_store_engine(f"sqlite:///{tmp_path / 'errand.db'}")
    yield engine
    engine.dispose()


def test_migration_13_adds_rule_id_and_old_messages_read_with_no_rule(engine: Engine) -> None:
    store_before_column(engine, 13, "messages", "rule_id")
    with Session(engine) as s, s.begin():
        bots.insert_bot(s, id="b_1", name="Old", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id="b_1", title="C", now=1.0)
        s.connection().exec_driver_sql(
            "INSERT INTO messages (conversation_id, role, text, state, created_at)"
            " VALUES ('c_1', 'assistant', 'Price is 180', 'done', 5)"
        )

    assert run_migrations(engine, now=2.0, migrations=MIGRATIONS[:13]) == [13]

    with Session(engine) as s:
        (rule_id,) = s.execute(select(MessageRow.rule_id)).one()
    assert rule_id == ""
