"""Storage for background tasks against real SQLite files: migration 2 and the tasks, runs, run_inputs and
deliveries repositories."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from core.clock import FakeClock
from core.ids import new_id
from core.store import approvals, bots, conversations, deliveries, run_inputs, runs, tasks
from core.store.database import Database, create_store_engine
from core.store.errors import NotFoundError
from core.store.migrations import MIGRATIONS, current_version, run_migrations
from core.tasks.stage_facts import load_state, load_states

TASK_TABLES = {"tasks", "runs", "run_inputs", "deliveries"}
TASK_INDEXES = {
    "tasks": {("bot_id", "ended_at")},
    "runs": {("state", "queued_at"), ("task_id", "queued_at"), ("rule_id", "queued_at")},
    "run_inputs": {("task_id", "taken_at")},
    "deliveries": {("status", "due_at")},
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def db(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=clock)
    await database.open()
    yield database
    await database.close()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_store_engine(f"sqlite:///{tmp_path / 'm.db'}")
    yield eng
    eng.dispose()


def indexed_columns(engine_or_conn: Any, table: str) -> set[tuple[str, ...]]:
    return {tuple(ix["column_names"]) for ix in inspect(engine_or_conn).get_indexes(table)}


# -- helpers ---------------------------------------------------------------------------------------


async def bot_and_conversation(db: Database) -> tuple[str, str]:
    def make(s: Session) -> tuple[str, str]:
        bot = bots.insert_bot(s, id=new_id("b"), name="Bot", workspace="/home/u/ws", now=1.0)
        conv = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot.id, title="Chat", now=1.0)
        return bot.id, conv.id

    return await db.write(make)


def add_task(s: Session, bot_id: str, conv_id: str, *, now: float = 10.0, title: str = "Research") -> str:
    task_id = new_id("t")
    return tasks.insert_task(
        s,
        id=task_id,
        bot_id=bot_id,
        conversation_id=conv_id,
        title=title,
        brief="Compare GPU prices",
        session_id=f"task-{task_id}",
        folder=f"/home/u/ws/tasks/research-{task_id}",
        permission="workspace-write",
        budget_usd=2.0,
        now=now,
    ).id


def add_run(s: Session, bot_id: str, *, now: float, task_id: str = "", rule_id: str = "") -> str:
    return runs.insert_run(
        s,
        id=new_id("r"),
        bot_id=bot_id,
        session_id="sess",
        cause="schedule" if rule_id else "launch",
        now=now,
        task_id=task_id,
        rule_id=rule_id,
    ).id


# -- migration 2 -----------------------------------------------------------------------------------


async def test_a_fresh_database_gets_the_task_tables_and_their_indexes(db: Database) -> None:
    def schema(s: Session) -> tuple[set[str], dict[str, set[tuple[str, ...]]], int]:
        conn = s.connection()
        names = set(inspect(conn).get_table_names())
        return names, {t: indexed_columns(conn, t) for t in TASK_TABLES}, current_version(conn)

    names, indexes, version = await db.read(schema)

    assert names >= TASK_TABLES
    assert version == MIGRATIONS[-1].version
    for table, wanted in TASK_INDEXES.items():
        assert indexes[table] >= wanted


def test_migration_2_upgrades_a_version_1_database_and_keeps_its_data(engine: Engine) -> None:
    assert run_migrations(engine, now=1.0, migrations=MIGRATIONS[:1]) == [1]
    assert not set(inspect(engine).get_table_names()) & TASK_TABLES
    with Session(engine) as s, s.begin():
        bot_id = bots.insert_bot(s, id=new_id("b"), name="Old", workspace="/ws", now=1.0).id

    assert run_migrations(engine, now=2.0) == [m.version for m in MIGRATIONS[1:]]
    assert run_migrations(engine, now=3.0) == []

    inspector = inspect(engine)
    assert set(inspector.get_table_names()) >= TASK_TABLES
    for table, wanted in TASK_INDEXES.items():
        assert indexed_columns(engine, table) >= wanted
    with Session(engine) as s:
        assert current_version(s.connection()) == MIGRATIONS[-1].version
        old = bots.get_bot(s, bot_id)
        assert old is not None
        assert old.name == "Old"


def test_migration_2_applied_again_changes_nothing(engine: Engine) -> None:
    run_migrations(engine, now=1.0)
    with Session(engine) as s, s.begin():
        conv_id = new_id("c")
        bot_id = bots.insert_bot(s, id=new_id("b"), name="B", workspace="/ws", now=1.0).id
        conversations.insert_conversation(s, id=conv_id, bot_id=bot_id, title="C", now=1.0)
        add_task(s, bot_id, conv_id)

    with engine.begin() as conn:
        MIGRATIONS[1].apply(conn)  # create_all skips existing tables: re-running it is harmless

    with Session(engine) as s:
        assert len(tasks.list_tasks(s)) == 1


async def test_server_defaults_fill_rows_written_without_the_optional_columns(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)

    def raw_inserts(s: Session) -> None:
        s.execute(
            text(
                "INSERT INTO tasks (id, bot_id, conversation_id, title, brief, session_id, folder, "
                "permission, budget_usd, created_at, updated_at) "
                "VALUES ('t_raw', :b, :c, 'T', 'B', 'S', '/f', 'read-only', 1.5, 5, 5)"
            ),
            {"b": bot_id, "c": conv_id},
        )
        s.execute(
            text(
                "INSERT INTO runs (id, bot_id, session_id, cause, state, queued_at) "
                "VALUES ('r_raw', :b, 'S', 'launch', 'queued', 5)"
            ),
            {"b": bot_id},
        )
        s.execute(
            text("INSERT INTO run_inputs (id, kind, text, created_at) VALUES ('i_raw', 'note', 'x', 5)")
        )
        s.execute(
            text(
                "INSERT INTO deliveries (id, bot_id, conversation_id, purpose, text, due_at, created_at) "
                "VALUES ('d_raw', :b, :c, 'note', 'x', 5, 5)"
            ),
            {"b": bot_id, "c": conv_id},
        )

    await db.write(raw_inserts)

    task = await db.read(lambda s: tasks.get_task(s, "t_raw"))
    run = await db.read(lambda s: runs.get_run(s, "r_raw"))
    inp = await db.read(lambda s: run_inputs.get_input(s, "i_raw"))
    delivery = await db.read(lambda s: deliveries.get_delivery(s, "d_raw"))
    assert task is not None
    assert run is not None
    assert inp is not None
    assert delivery is not None
    assert (task.origin_message_id, task.origin_ref, task.model, task.spent_usd, task.report) == (
        0,
        "",
        "",
        0,
        "",
    )
    assert (task.ended_at, task.end_reason, task.stopped_by, task.cleanup_at) == (0, "", "", 0)
    assert (run.task_id, run.rule_id, run.rule_version, run.mode, run.outcome) == ("", "", 0, "act", "")
    assert (run.activity, run.tokens_in, run.cost_usd, run.nudged, run.started_at) == ([], 0, 0, False, 0)
    assert (inp.task_id, inp.run_id, inp.from_person, inp.delivered_at, inp.taken_at) == ("", "", False, 0, 0)
    assert (delivery.files, delivery.card, delivery.status, delivery.attempts) == ([], "", "pending", 0)
    assert (delivery.sent_at, delivery.message_id, delivery.held_reason) == (0, 0, "")


# -- tasks -----------------------------------------------------------------------------------------


async def test_tasks_round_trip(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)

    stored = await db.write(
        lambda s: tasks.insert_task(
            s,
            id="t_0123456789ab",
            bot_id=bot_id,
            conversation_id=conv_id,
            title="调研 GPU 价格",
            brief="三家云的 GPU 价格",
            session_id="task-t_0123456789ab",
            folder="/home/u/ws/tasks/gpu-t_0123456789ab",
            permission="workspace-write",
            budget_usd=2.5,
            now=1_790_000_000.25,
            model="deepseek-chat",
            origin_message_id=42,
            origin_ref="om_abc",
        )
    )

    assert stored == tasks.TaskRecord(
        id="t_0123456789ab",
        bot_id=bot_id,
        conversation_id=conv_id,
        origin_message_id=42,
        origin_ref="om_abc",
        title="调研 GPU 价格",
        brief="三家云的 GPU 价格",
        session_id="task-t_0123456789ab",
        folder="/home/u/ws/tasks/gpu-t_0123456789ab",
        model="deepseek-chat",
        permission="workspace-write",
        budget_usd=2.5,
        spent_usd=0.0,
        report="",
        ended_at=0.0,
        end_reason="",
        stopped_by="",
        cleanup_at=0.0,
        created_at=1_790_000_000.25,
        updated_at=1_790_000_000.25,
    )
    assert await db.read(lambda s: tasks.get_task(s, stored.id)) == stored
    assert await db.read(lambda s: tasks.get_task(s, "t_missing")) is None


async def test_list_and_count_tasks(db: Database) -> None:
    bot_a, conv_a = await bot_and_conversation(db)
    bot_b, conv_b = await bot_and_conversation(db)
    first = await db.write(lambda s: add_task(s, bot_a, conv_a, now=1.0))
    second = await db.write(lambda s: add_task(s, bot_a, conv_a, now=2.0))
    other = await db.write(lambda s: add_task(s, bot_b, conv_b, now=3.0))
    await db.write(lambda s: tasks.update_task(s, first, now=4.0, ended_at=4.0, end_reason="done"))

    def ids(records: list[tasks.TaskRecord]) -> list[str]:
        return [t.id for t in records]

    assert ids(await db.read(tasks.list_tasks)) == [other, second, first]
    assert ids(await db.read(lambda s: tasks.list_tasks(s, bot_id=bot_a))) == [second, first]
    assert ids(await db.read(lambda s: tasks.list_tasks(s, bot_id=bot_a, include_ended=False))) == [second]
    assert ids(await db.read(lambda s: tasks.list_tasks(s, include_ended=False))) == [other, second]
    assert await db.read(lambda s: tasks.count_open_tasks(s, bot_a)) == 1
    assert await db.read(lambda s: tasks.count_open_tasks(s, bot_b)) == 1
    assert await db.read(lambda s: tasks.count_open_tasks(s, "b_none")) == 0


async def test_update_task_changes_fields_and_can_reopen(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    task_id = await db.write(lambda s: add_task(s, bot_id, conv_id, now=1.0))

    stopped = await db.write(
        lambda s: tasks.update_task(
            s,
            task_id,
            now=7.0,
            title="New title",
            report='{"state": "done", "message": "好了"}',
            spent_usd=0.75,
            ended_at=7.0,
            end_reason="stopped",
            stopped_by="desktop",
            cleanup_at=99.0,
            budget_usd=5.0,
            model="m2",
        )
    )
    assert (stopped.title, stopped.report, stopped.spent_usd) == (
        "New title",
        '{"state": "done", "message": "好了"}',
        0.75,
    )
    assert (stopped.ended_at, stopped.end_reason, stopped.stopped_by) == (7.0, "stopped", "desktop")
    assert (stopped.cleanup_at, stopped.budget_usd, stopped.model) == (99.0, 5.0, "m2")
    assert (stopped.created_at, stopped.updated_at) == (1.0, 7.0)

    reopened = await db.write(lambda s: tasks.update_task(s, task_id, now=8.0, ended_at=0.0, end_reason=""))
    assert (reopened.ended_at, reopened.end_reason, reopened.updated_at) == (0.0, "", 8.0)
    assert await db.read(lambda s: tasks.get_task(s, task_id)) == reopened


async def test_bad_task_updates_raise_and_change_nothing(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    task_id = await db.write(lambda s: add_task(s, bot_id, conv_id))
    before = await db.read(lambda s: tasks.get_task(s, task_id))
    finished: Any = "finished"

    with pytest.raises(ValueError, match="created_at"):
        await db.write(lambda s: tasks.update_task(s, task_id, now=9.0, title="X", created_at=0.0))  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"'finished'.*'archived'"):
        await db.write(lambda s: tasks.update_task(s, task_id, now=9.0, title="X", end_reason=finished))
    with pytest.raises(NotFoundError, match="t_missing"):
        await db.write(lambda s: tasks.update_task(s, "t_missing", now=9.0, title="X"))

    assert await db.read(lambda s: tasks.get_task(s, task_id)) == before


async def test_insert_task_checks_its_folder_and_its_bot(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)

    def with_folder(folder: str, bot: str = bot_id) -> Any:
        return lambda s: tasks.insert_task(
            s,
            id=new_id("t"),
            bot_id=bot,
            conversation_id=conv_id,
            title="T",
            brief="B",
            session_id="S",
            folder=folder,
            permission="read-only",
            budget_usd=1.0,
            now=1.0,
        )

    with pytest.raises(ValueError, match="absolute"):
        await db.write(with_folder("tasks/relative"))
    with pytest.raises(IntegrityError):
        await db.write(with_folder("/abs", bot="b_does_not_exist"))
    assert await db.read(tasks.list_tasks) == []


async def test_delete_task_removes_its_runs_inputs_and_deliveries(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    doomed = await db.write(lambda s: add_task(s, bot_id, conv_id))
    kept = await db.write(lambda s: add_task(s, bot_id, conv_id))

    def fill(s: Session, task_id: str, tag: str) -> None:
        run_id = add_run(s, bot_id, now=1.0, task_id=task_id)
        run_inputs.insert_input(s, id=f"i_{tag}", kind="brief", text="go", now=1.0, task_id=task_id)
        deliveries.insert_delivery(
            s,
            id=f"{run_id}:result",
            bot_id=bot_id,
            conversation_id=conv_id,
            purpose="result",
            text="done",
            now=1.0,
            task_id=task_id,
            run_id=run_id,
        )

    await db.write(lambda s: fill(s, doomed, "doomed"))
    await db.write(lambda s: fill(s, kept, "kept"))
    rule_run = await db.write(lambda s: add_run(s, bot_id, now=1.0, rule_id="u_rule"))

    assert await db.write(lambda s: tasks.delete_task(s, doomed)) is True
    assert await db.write(lambda s: tasks.delete_task(s, doomed)) is False

    assert await db.read(lambda s: tasks.get_task(s, doomed)) is None
    assert await db.read(lambda s: runs.runs_of_task(s, doomed)) == []
    assert await db.read(lambda s: run_inputs.inputs_of_task(s, doomed)) == []
    assert await db.read(lambda s: deliveries.deliveries_of_task(s, doomed)) == []
    assert await db.read(lambda s: tasks.get_task(s, kept)) is not None
    assert len(await db.read(lambda s: runs.runs_of_task(s, kept))) == 1
    assert len(await db.read(lambda s: run_inputs.inputs_of_task(s, kept))) == 1
    assert len(await db.read(lambda s: deliveries.deliveries_of_task(s, kept))) == 1
    assert await db.read(lambda s: runs.get_run(s, rule_run)) is not None


# -- runs ------------------------------------------------------------------------------------------


async def test_runs_round_trip_through_their_states(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    task_id = await db.write(lambda s: add_task(s, bot_id, conv_id))

    queued = await db.write(
        lambda s: runs.insert_run(
            s, id="r_1", bot_id=bot_id, session_id="task-x", cause="launch", now=10.0, task_id=task_id
        )
    )
    assert queued == runs.RunRecord(
        id="r_1",
        bot_id=bot_id,
        task_id=task_id,
        rule_id="",
        rule_version=0,
        mode="act",
        session_id="task-x",
        cause="launch",
        state="queued",
        outcome="",
        report="",
        would="",
        activity=[],
        tokens_in=0,
        tokens_out=0,
        cost_usd=0.0,
        error="",
        nudged=False,
        queued_at=10.0,
        started_at=0.0,
        ended_at=0.0,
    )

    running = await db.write(lambda s: runs.set_run_state(s, "r_1", "running", now=11.0))
    await db.write(lambda s: runs.set_run_state(s, "r_1", "settling", now=12.0))
    again = await db.write(lambda s: runs.set_run_state(s, "r_1", "running", now=13.0))
    assert (running.state, running.started_at) == ("running", 11.0)
    assert (again.state, again.started_at) == ("running", 11.0)  # only the first start counts

    steps: list[dict[str, object]] = [
        {"kind": "model", "title": "思考", "tokens_in": 12},
        {"kind": "tool", "title": "bash ls", "ok": False},
    ]
    updated = await db.write(
        lambda s: runs.update_run(
            s,
            "r_1",
            report='{"state": "progress"}',
            would="would say hi",
            activity=steps,
            tokens_in=100,
            tokens_out=20,
            cost_usd=0.012,
            error="transient",
            nudged=True,
            session_id="task-y",
        )
    )
    assert (updated.report, updated.would, updated.activity) == (
        '{"state": "progress"}',
        "would say hi",
        steps,
    )
    assert (updated.tokens_in, updated.tokens_out, updated.cost_usd) == (100, 20, 0.012)
    assert (updated.error, updated.nudged, updated.session_id) == ("transient", True, "task-y")
    raw = await db.read(lambda s: s.execute(text("SELECT activity FROM runs WHERE id = 'r_1'")).scalar())
    assert isinstance(raw, str)
    assert "思考" in raw

    ended = await db.write(
        lambda s: runs.end_run(s, "r_1", outcome="done", now=20.0, report='{"state":"done"}')
    )
    assert (ended.state, ended.outcome, ended.ended_at) == ("ended", "done", 20.0)
    assert (ended.report, ended.error) == ('{"state":"done"}', "transient")  # '' keeps the earlier error
    assert await db.read(lambda s: runs.get_run(s, "r_1")) == ended
    assert await db.read(lambda s: runs.get_run(s, "r_missing")) is None

    # Late figures still land on an ended run.
    late = await db.write(lambda s: runs.update_run(s, "r_1", cost_usd=0.02))
    assert (late.cost_usd, late.state) == (0.02, "ended")


async def test_a_rule_run_records_its_rule_version_and_mode(db: Database) -> None:
    bot_id, _ = await bot_and_conversation(db)

    run = await db.write(
        lambda s: runs.insert_run(
            s,
            id="r_rule",
            bot_id=bot_id,
            session_id="rule-1",
            cause="schedule",
            now=1.0,
            rule_id="u_1",
            rule_version=3,
            mode="observe",
        )
    )
    failed = await db.write(lambda s: runs.end_run(s, "r_rule", outcome="failed", now=2.0, error="page down"))

    assert (run.task_id, run.rule_id, run.rule_version, run.mode) == ("", "u_1", 3, "observe")
    assert (failed.outcome, failed.error, failed.started_at, failed.ended_at) == (
        "failed",
        "page down",
        0.0,
        2.0,
    )
    assert await db.read(lambda s: runs.runs_of_task(s, "")) == []
    assert await db.read(lambda s: runs.latest_run(s, "")) is None


async def test_an_ended_run_stays_ended(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    task_id = await db.write(lambda s: add_task(s, bot_id, conv_id))
    run_id = await db.write(lambda s: add_run(s, bot_id, now=1.0, task_id=task_id))
    stopped = await db.write(lambda s: runs.end_run(s, run_id, outcome="stopped", now=2.0))

    with pytest.raises(runs.RunEndedError, match="stopped"):
        await db.write(lambda s: runs.set_run_state(s, run_id, "settling", now=3.0))
    with pytest.raises(runs.RunEndedError):
        await db.write(lambda s: runs.end_run(s, run_id, outcome="done", now=3.0))

    assert await db.read(lambda s: runs.get_run(s, run_id)) == stopped


async def test_bad_run_values_raise_and_change_nothing(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    task_id = await db.write(lambda s: add_task(s, bot_id, conv_id))
    run_id = await db.write(lambda s: add_run(s, bot_id, now=1.0, task_id=task_id))
    before = await db.read(lambda s: runs.get_run(s, run_id))
    bad: Any = "whenever"
    ended: Any = "ended"

    def insert(**kwargs: Any) -> Any:
        fields: dict[str, Any] = {"cause": "launch", "task_id": task_id, "mode": "act", **kwargs}
        return lambda s: runs.insert_run(s, id=new_id("r"), bot_id=bot_id, session_id="x", now=5.0, **fields)

    with pytest.raises(ValueError, match=r"'whenever'.*'recover'"):
        await db.write(insert(cause=bad))
    with pytest.raises(ValueError, match=r"'whenever'.*'observe'"):
        await db.write(insert(mode=bad))
    with pytest.raises(ValueError, match="exactly one"):
        await db.write(insert(rule_id="u_1"))
    with pytest.raises(ValueError, match="exactly one"):
        await db.write(insert(task_id=""))
    with pytest.raises(ValueError, match=r"'whenever'.*'settling'"):
        await db.write(lambda s: runs.set_run_state(s, run_id, bad, now=5.0))
    with pytest.raises(ValueError, match="end_run"):
        await db.write(lambda s: runs.set_run_state(s, run_id, ended, now=5.0))
    with pytest.raises(ValueError, match=r"'whenever'.*'interrupted'"):
        await db.write(lambda s: runs.end_run(s, run_id, outcome=bad, now=5.0))
    with pytest.raises(ValueError, match="state"):
        await db.write(lambda s: runs.update_run(s, run_id, cost_usd=1.0, state="ended"))  # type: ignore[call-arg]
    with pytest.raises(NotFoundError):
        await db.write(lambda s: runs.update_run(s, "r_missing", cost_usd=1.0))
    with pytest.raises(NotFoundError):
        await db.write(lambda s: runs.set_run_state(s, "r_missing", "running", now=5.0))

    assert await db.read(lambda s: runs.get_run(s, run_id)) == before
    assert [r.id for r in await db.read(lambda s: runs.runs_of_task(s, task_id))] == [run_id]


async def test_runs_of_task_latest_run_and_live_runs_in_order(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    task_a = await db.write(lambda s: add_task(s, bot_id, conv_id))
    task_b = await db.write(lambda s: add_task(s, bot_id, conv_id))
    # Inserted out of queue order on purpose: the order comes from queued_at, not insertion.
    a2 = await db.write(lambda s: add_run(s, bot_id, now=20.0, task_id=task_a))
    a1 = await db.write(lambda s: add_run(s, bot_id, now=10.0, task_id=task_a))
    b1 = await db.write(lambda s: add_run(s, bot_id, now=15.0, task_id=task_b))
    rule = await db.write(lambda s: add_run(s, bot_id, now=5.0, rule_id="u_1"))
    a3 = await db.write(lambda s: add_run(s, bot_id, now=30.0, task_id=task_a))
    await db.write(lambda s: runs.set_run_state(s, a2, "running", now=21.0))
    await db.write(lambda s: runs.set_run_state(s, b1, "settling", now=22.0))
    await db.write(lambda s: runs.end_run(s, a1, outcome="interrupted", now=23.0))

    assert [r.id for r in await db.read(lambda s: runs.runs_of_task(s, task_a))] == [a1, a2, a3]
    latest = await db.read(lambda s: runs.latest_run(s, task_a))
    assert latest is not None
    assert latest.id == a3
    assert await db.read(lambda s: runs.latest_run(s, "t_none")) is None
    live = await db.read(runs.live_runs)
    assert [(r.id, r.state) for r in live] == [
        (rule, "queued"),
        (b1, "settling"),
        (a2, "running"),
        (a3, "queued"),
    ]


# -- run inputs ------------------------------------------------------------------------------------


async def test_run_inputs_round_trip_and_move_from_delivered_to_taken(db: Database) -> None:
    stored = await db.write(
        lambda s: run_inputs.insert_input(
            s, id="i_1", kind="followup", text="也看看 AWS", now=5.0, task_id="t_1", from_person=True
        )
    )
    assert stored == run_inputs.RunInputRecord(
        id="i_1",
        task_id="t_1",
        rule_id="",
        run_id="",
        kind="followup",
        text="也看看 AWS",
        from_person=True,
        delivered_at=0.0,
        taken_at=0.0,
        created_at=5.0,
    )

    delivered = await db.write(lambda s: run_inputs.mark_delivered(s, "i_1", run_id="r_1", now=6.0))
    redelivered = await db.write(lambda s: run_inputs.mark_delivered(s, "i_1", run_id="r_2", now=8.0))
    assert (delivered.run_id, delivered.delivered_at) == ("r_1", 6.0)
    assert (redelivered.run_id, redelivered.delivered_at, redelivered.taken_at) == ("r_2", 8.0, 0.0)

    taken = await db.write(lambda s: run_inputs.mark_taken(s, "i_1", now=9.0))
    taken_again = await db.write(lambda s: run_inputs.mark_taken(s, "i_1", now=12.0))
    assert taken.taken_at == 9.0
    assert taken_again == taken  # the first taken_at stays
    assert await db.read(lambda s: run_inputs.get_input(s, "i_1")) == taken
    assert await db.read(lambda s: run_inputs.get_input(s, "i_missing")) is None
    with pytest.raises(NotFoundError):
        await db.write(lambda s: run_inputs.mark_taken(s, "i_missing", now=1.0))
    with pytest.raises(NotFoundError):
        await db.write(lambda s: run_inputs.mark_delivered(s, "i_missing", run_id="r", now=1.0))


async def test_inputs_of_task_and_untaken_inputs_oldest_first(db: Database) -> None:
    def add(s: Session, id: str, now: float, task_id: str = "t_1", rule_id: str = "") -> None:
        run_inputs.insert_input(s, id=id, kind="note", text=id, now=now, task_id=task_id, rule_id=rule_id)

    await db.write(lambda s: add(s, "i_c", 3.0))
    await db.write(lambda s: add(s, "i_a", 1.0))
    await db.write(lambda s: add(s, "i_b", 2.0))
    await db.write(lambda s: add(s, "i_other", 0.5, task_id="t_2"))
    await db.write(lambda s: add(s, "i_rule", 0.5, task_id="", rule_id="u_1"))
    await db.write(lambda s: run_inputs.mark_taken(s, "i_a", now=4.0))

    assert [i.id for i in await db.read(lambda s: run_inputs.inputs_of_task(s, "t_1"))] == [
        "i_a",
        "i_b",
        "i_c",
    ]
    assert [i.id for i in await db.read(lambda s: run_inputs.untaken_inputs(s, "t_1"))] == ["i_b", "i_c"]
    assert await db.read(lambda s: run_inputs.inputs_of_task(s, "")) == []
    assert await db.read(lambda s: run_inputs.untaken_inputs(s, "")) == []


async def test_an_unknown_input_kind_is_refused(db: Database) -> None:
    bad: Any = "email"
    with pytest.raises(ValueError, match=r"'email'.*'followup'"):
        await db.write(
            lambda s: run_inputs.insert_input(s, id="i_1", kind=bad, text="x", now=1.0, task_id="t")
        )
    assert await db.read(lambda s: run_inputs.get_input(s, "i_1")) is None


# -- deliveries ------------------------------------------------------------------------------------


async def test_deliveries_round_trip_and_are_idempotent_by_id(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)

    stored, created = await db.write(
        lambda s: deliveries.insert_delivery(
            s,
            id="r_1:result",
            bot_id=bot_id,
            conversation_id=conv_id,
            purpose="result",
            text="三家云的价格对比好了",
            now=5.0,
            task_id="t_1",
            run_id="r_1",
            files=["/home/u/ws/tasks/x/report.md", "/tmp/图.png"],
            card='{"title": "done"}',
        )
    )
    assert created is True
    assert stored == deliveries.DeliveryRecord(
        id="r_1:result",
        bot_id=bot_id,
        conversation_id=conv_id,
        task_id="t_1",
        rule_id="",
        run_id="r_1",
        purpose="result",
        text="三家云的价格对比好了",
        files=["/home/u/ws/tasks/x/report.md", "/tmp/图.png"],
        card='{"title": "done"}',
        status="pending",
        held_reason="",
        attempts=0,
        last_error="",
        due_at=5.0,
        sent_at=0.0,
        message_id=0,
        created_at=5.0,
    )

    again, created_again = await db.write(
        lambda s: deliveries.insert_delivery(
            s,
            id="r_1:result",
            bot_id=bot_id,
            conversation_id=conv_id,
            purpose="failure",
            text="a different text after a restart",
            now=50.0,
        )
    )
    assert created_again is False
    assert again == stored
    assert await db.read(lambda s: deliveries.get_delivery(s, "r_1:result")) == stored
    assert await db.read(lambda s: deliveries.get_delivery(s, "missing")) is None


async def test_delivery_status_changes(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    await db.write(
        lambda s: deliveries.insert_delivery(
            s, id="d1", bot_id=bot_id, conversation_id=conv_id, purpose="question", text="?", now=1.0
        )
    )

    failed = await db.write(lambda s: deliveries.mark_failed_attempt(s, "d1", error="timeout"))
    failed_twice = await db.write(lambda s: deliveries.mark_failed_attempt(s, "d1", error="502"))
    held = await db.write(
        lambda s: deliveries.set_delivery_status(s, "d1", "held", held_reason="window_closed")
    )
    pending = await db.write(lambda s: deliveries.set_delivery_status(s, "d1", "pending"))
    sent = await db.write(lambda s: deliveries.mark_sent(s, "d1", now=9.0, message_id=77))

    assert (failed.attempts, failed.last_error, failed.status) == (1, "timeout", "pending")
    assert (failed_twice.attempts, failed_twice.last_error) == (2, "502")
    assert (held.status, held.held_reason) == ("held", "window_closed")
    assert (pending.status, pending.held_reason) == ("pending", "")
    assert (sent.status, sent.sent_at, sent.message_id, sent.attempts) == ("sent", 9.0, 77, 2)
    assert await db.read(lambda s: deliveries.get_delivery(s, "d1")) == sent
    with pytest.raises(NotFoundError):
        await db.write(lambda s: deliveries.mark_sent(s, "missing", now=1.0, message_id=1))
    with pytest.raises(NotFoundError):
        await db.write(lambda s: deliveries.mark_failed_attempt(s, "missing", error="x"))
    with pytest.raises(NotFoundError):
        await db.write(lambda s: deliveries.set_delivery_status(s, "missing", "dropped"))


async def test_pending_deliveries_are_the_due_ones_earliest_first(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)

    def add(s: Session, id: str, due_at: float, task_id: str = "t_1") -> None:
        deliveries.insert_delivery(
            s,
            id=id,
            bot_id=bot_id,
            conversation_id=conv_id,
            purpose="result",
            text=id,
            now=1.0,
            due_at=due_at,
            task_id=task_id,
        )

    await db.write(lambda s: add(s, "late", 30.0))
    await db.write(lambda s: add(s, "early", 10.0))
    await db.write(lambda s: add(s, "middle", 20.0))
    await db.write(lambda s: add(s, "future", 100.0))
    await db.write(lambda s: add(s, "held", 5.0))
    await db.write(lambda s: add(s, "sent", 5.0, task_id="t_2"))
    await db.write(lambda s: deliveries.set_delivery_status(s, "held", "held", held_reason="quiet_hours"))
    await db.write(lambda s: deliveries.mark_sent(s, "sent", now=6.0, message_id=1))

    due = await db.read(lambda s: deliveries.pending_deliveries(s, now=30.0))
    assert [d.id for d in due] == ["early", "middle", "late"]
    assert await db.read(lambda s: deliveries.pending_deliveries(s, now=9.0)) == []
    of_task = await db.read(lambda s: deliveries.deliveries_of_task(s, "t_1"))
    assert {d.id for d in of_task} == {"late", "early", "middle", "future", "held"}
    assert [d.id for d in await db.read(lambda s: deliveries.deliveries_of_task(s, "t_2"))] == ["sent"]
    assert await db.read(lambda s: deliveries.deliveries_of_task(s, "")) == []


async def test_bad_delivery_values_raise_and_change_nothing(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    await db.write(
        lambda s: deliveries.insert_delivery(
            s, id="d1", bot_id=bot_id, conversation_id=conv_id, purpose="note", text="n", now=1.0
        )
    )
    before = await db.read(lambda s: deliveries.get_delivery(s, "d1"))
    bad: Any = "spam"

    with pytest.raises(ValueError, match=r"'spam'.*'reminder'"):
        await db.write(
            lambda s: deliveries.insert_delivery(
                s, id="d2", bot_id=bot_id, conversation_id=conv_id, purpose=bad, text="n", now=1.0
            )
        )
    with pytest.raises(ValueError, match=r"'spam'.*'dropped'"):
        await db.write(lambda s: deliveries.set_delivery_status(s, "d1", bad))

    assert await db.read(lambda s: deliveries.get_delivery(s, "d2")) is None
    assert await db.read(lambda s: deliveries.get_delivery(s, "d1")) == before


async def test_states_of_many_tasks_read_together_match_each_read_alone(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)

    def fill(s: Session) -> list[tasks.TaskRecord]:
        made = [add_task(s, bot_id, conv_id, title=f"Task {n}", now=10.0 + n) for n in range(5)]
        add_run(s, bot_id, now=20.0, task_id=made[0])  # queued
        ended = add_run(s, bot_id, now=21.0, task_id=made[1])
        runs.end_run(s, ended, outcome="done", now=30.0)
        failed = add_run(s, bot_id, now=22.0, task_id=made[2])
        runs.end_run(s, failed, outcome="failed", now=31.0)
        run_inputs.insert_input(
            s, id=new_id("i"), kind="followup", text="and H100?", now=40.0, task_id=made[2], from_person=True
        )
        deliveries.insert_delivery(
            s,
            id=new_id("d"),
            bot_id=bot_id,
            conversation_id=conv_id,
            purpose="result",
            text="done",
            now=32.0,
            task_id=made[1],
        )
        approvals.insert_approval(
            s,
            id=new_id("q"),
            kind="question",
            bot_id=bot_id,
            conversation_id=conv_id,
            text="Which account?",
            now=33.0,
            task_id=made[3],
        )
        return [r for r in tasks.list_tasks(s) if r.id in made]

    records = await db.write(fill)
    active = {records[4].id}

    def both(s: Session) -> tuple[list[str], list[str]]:
        together = load_states(s, records, active=active)
        alone = [load_state(s, r, active=r.id in active) for r in records]
        return [st.stage.key for st in together], [st.stage.key for st in alone]

    together, alone = await db.read(both)
    assert together == alone
    assert len(set(together)) >= 3  # the fixture really spans different stages
