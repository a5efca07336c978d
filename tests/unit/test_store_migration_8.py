"""Migration 8: cost by currency, task use and archive, rule budgets, added to a version-7 database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text
from sqlalchemy.orm import Session

from core.store import bots, conversations
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.database import create_store_engine
from core.store.migrations import MIGRATIONS, run_migrations

_ADDED = {
    "tasks": ("spent_other", "unpriced_calls", "last_used_at", "archived_at"),
    "runs": ("cost_other", "unpriced_calls"),
    "rules": ("run_budget_usd", "month_budget_usd", "budget_pushed"),
}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_store_engine(f"sqlite:///{tmp_path / 'errand.db'}")
    yield engine
    engine.dispose()


def test_migration_8_adds_its_columns_and_old_rows_read_with_the_defaults(engine: Engine) -> None:
    assert run_migrations(engine, now=1.0, migrations=MIGRATIONS[:7]) == [1, 2, 3, 4, 5, 6, 7]
    with engine.begin() as conn:
        # Earlier migrations build tables from today's models; a build before migration 8 had none of these.
        for table, columns in _ADDED.items():
            for column in columns:
                conn.exec_driver_sql(f'ALTER TABLE {table} DROP COLUMN "{column}"')
    with Session(engine) as s, s.begin():
        bot = bots.insert_bot(s, id="b_1", name="Old", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id=bot.id, title="C", now=1.0)
        s.execute(
            text(
                "INSERT INTO tasks (id, bot_id, conversation_id, title, brief, session_id, folder,"
                " permission, budget_usd, created_at, updated_at) VALUES"
                " ('t_old', 'b_1', 'c_1', 'T', 'B', 'task-t_old', '/ws/t', 'workspace-write', 1.0, 5, 7)"
            )
        )
        s.execute(
            text(
                "INSERT INTO runs (id, bot_id, task_id, session_id, cause, state, queued_at)"
                " VALUES ('r_old', 'b_1', 't_old', 'task-t_old', 'launch', 'queued', 5)"
            )
        )
        s.execute(
            text(
                "INSERT INTO rules (id, bot_id, conversation_id, title, instruction, schedule, tz,"
                " created_at, updated_at) VALUES ('ru_old', 'b_1', 'c_1', 'T', 'words', '{}', 'UTC', 5, 5)"
            )
        )

    assert run_migrations(engine, now=2.0, migrations=MIGRATIONS[:8]) == [8]
    for table, columns in _ADDED.items():
        assert set(columns) <= {c["name"] for c in inspect(engine).get_columns(table)}
    with Session(engine) as s:
        task = task_rows.get_task(s, "t_old")
        run = run_rows.get_run(s, "r_old")
        rule = rule_rows.get_rule(s, "ru_old")
    assert task is not None and run is not None and rule is not None
    assert (task.spent_other, task.unpriced_calls, task.archived_at) == ({}, 0, 0.0)
    assert task.idle_since == 7  # never used since: counted from its last change
    assert (run.cost_other, run.unpriced_calls) == ({}, 0)
    assert (rule.run_budget_usd, rule.month_budget_usd, rule.budget_pushed) == (0.1, 3.0, "")


def test_amounts_in_other_currencies_round_trip_on_tasks_and_runs(engine: Engine) -> None:
    run_migrations(engine, now=1.0)
    with Session(engine) as s, s.begin():
        bot = bots.insert_bot(s, id="b_1", name="B", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id=bot.id, title="C", now=1.0)
        task_rows.insert_task(
            s,
            id="t_1",
            bot_id="b_1",
            conversation_id="c_1",
            title="T",
            brief="B",
            session_id="task-t_1",
            folder="/ws/t",
            permission="workspace-write",
            budget_usd=1.0,
            now=1.0,
        )
        run_rows.insert_run(
            s, id="r_1", bot_id="b_1", session_id="task-t_1", cause="launch", now=1.0, task_id="t_1"
        )
        task_rows.update_task(s, "t_1", now=2.0, spent_other={"CNY": 0.5}, unpriced_calls=2, last_used_at=2.0)
        run_rows.update_run(s, "r_1", cost_other={"CNY": 0.5, "EUR": 0.0}, unpriced_calls=2)
    with Session(engine) as s:
        task = task_rows.get_task(s, "t_1")
        run = run_rows.get_run(s, "r_1")
    assert task is not None and run is not None
    assert (task.spent_other, task.unpriced_calls, task.idle_since) == ({"CNY": 0.5}, 2, 2.0)
    assert run.cost_other == {"CNY": 0.5}  # a zero amount is no amount
