"""Migration 15: runs.error_words, added to a version-14 database; an old failed run reads its English."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from core.store import bots, conversations
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import create_store_engine
from core.store.migrations import MIGRATIONS, run_migrations
from tests.unit.old_store import store_before_column


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_store_engine(f"sqlite:///{tmp_path / 'errand.db'}")
    yield engine
    engine.dispose()


def test_migration_15_adds_error_words_and_an_old_failure_reads_in_english(engine: Engine) -> None:
    store_before_column(engine, 15, "runs", "error_words")
    with Session(engine) as s, s.begin():
        bots.insert_bot(s, id="b_1", name="Old", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id="b_1", title="C", now=1.0)
        s.connection().exec_driver_sql(
            "INSERT INTO runs (id, bot_id, session_id, cause, state, outcome, error, queued_at)"
            " VALUES ('r_old', 'b_1', 'rule-x-1', 'schedule', 'ended', 'failed', 'The key was refused', 5)"
        )

    assert run_migrations(engine, now=2.0, migrations=MIGRATIONS[:15]) == [15]

    with Session(engine) as s:
        old = run_rows.get_run(s, "r_old")
    assert old is not None
    assert (old.error_words, old.error_in("zh")) == ({}, "The key was refused")


def test_a_run_ended_with_words_reads_them_back_per_language(engine: Engine) -> None:
    run_migrations(engine, now=1.0)
    with Session(engine) as s, s.begin():
        bots.insert_bot(s, id="b_1", name="B", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id="b_1", title="C", now=1.0)
        rule_rows.insert_rule(
            s,
            id="ru_1",
            bot_id="b_1",
            conversation_id="c_1",
            title="X price",
            instruction="check X",
            schedule={"kind": "daily", "time": "08:00"},
            tz="UTC",
            now=1.0,
        )
        run_rows.insert_run(
            s, id="r_1", bot_id="b_1", session_id="rule-ru_1-1", cause="schedule", now=1.0, rule_id="ru_1"
        )
        run_rows.set_run_state(s, "r_1", "running", now=2.0)
        words = {"zh": "模型服务拒绝了 API Key", "en": "The model server rejected the API key"}
        run_rows.end_run(s, "r_1", outcome="failed", now=3.0, error=words["en"], error_words=words)
    with Session(engine) as s:
        ended = run_rows.get_run(s, "r_1")
    assert ended is not None
    assert (ended.error_in("zh"), ended.error_in("en"), ended.error_in("fr")) == (
        words["zh"],
        words["en"],
        words["en"],
    )
