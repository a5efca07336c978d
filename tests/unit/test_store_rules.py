"""Storage for rules against real SQLite files: migration 6 and the rules and rule_versions repository."""

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
from core.store import bots, conversations, deliveries, run_inputs, runs
from core.store import rules as rule_rows
from core.store.database import Database, create_store_engine
from core.store.errors import NotFoundError
from core.store.migrations import MIGRATIONS, current_version, run_migrations
from core.store.models import RuleRow

RULE_TABLES = {"rules", "rule_versions"}
DAILY = {"kind": "daily", "time": "08:00", "tz": "Asia/Shanghai"}


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


def indexed_columns(engine: Any, table: str) -> set[tuple[str, ...]]:
    return {tuple(ix["column_names"]) for ix in inspect(engine).get_indexes(table)}


async def bot_and_conversation(db: Database) -> tuple[str, str]:
    def make(s: Session) -> tuple[str, str]:
        bot = bots.insert_bot(s, id=new_id("b"), name="Bot", workspace="/home/u/ws", now=1.0)
        conv = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot.id, title="Chat", now=1.0)
        return bot.id, conv.id

    return await db.write(make)


def add_rule(
    s: Session, bot_id: str, conv_id: str, *, now: float = 10.0, **extra: Any
) -> rule_rows.RuleRecord:
    rule_id = new_id("ru")
    words = extra.pop("instruction", "每天早上 8 点看看 X 的价格,低于 200 告诉我")
    record = rule_rows.insert_rule(
        s,
        id=rule_id,
        bot_id=bot_id,
        conversation_id=conv_id,
        title=extra.pop("title", "X price"),
        instruction=words,
        schedule=extra.pop("schedule", DAILY),
        tz="Asia/Shanghai",
        now=now,
        next_run_at=extra.pop("next_run_at", 100.0),
        **extra,
    )
    rule_rows.insert_version(s, rule_id=rule_id, version=1, instruction=words, now=now)
    return record


# -- migration 6 -----------------------------------------------------------------------------------


def test_migration_6_on_a_fresh_database_creates_the_rule_tables_and_indexes(engine: Engine) -> None:
    assert run_migrations(engine, now=1.0) == [m.version for m in MIGRATIONS]
    assert MIGRATIONS[5].version == 6
    assert set(inspect(engine).get_table_names()) >= RULE_TABLES
    assert indexed_columns(engine, "rules") >= {("next_run_at",), ("bot_id",)}
    pk = inspect(engine).get_pk_constraint("rule_versions")["constrained_columns"]
    assert pk == ["rule_id", "version"]


def test_migration_6_upgrades_a_version_5_database_and_keeps_its_data(engine: Engine) -> None:
    assert run_migrations(engine, now=1.0, migrations=MIGRATIONS[:5]) == [1, 2, 3, 4, 5]
    assert not set(inspect(engine).get_table_names()) & RULE_TABLES
    with Session(engine) as s, s.begin():
        bot_id = bots.insert_bot(s, id=new_id("b"), name="Old", workspace="/ws", now=1.0).id
        conv_id = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot_id, title="C", now=1.0).id

    assert run_migrations(engine, now=2.0, migrations=MIGRATIONS[:6]) == [6]
    assert run_migrations(engine, now=3.0, migrations=MIGRATIONS[:6]) == []
    with engine.connect() as conn:
        assert current_version(conn) == 6
    assert run_migrations(engine, now=4.0) == [m.version for m in MIGRATIONS[6:]]

    assert set(inspect(engine).get_table_names()) >= RULE_TABLES
    with Session(engine) as s, s.begin():
        old = bots.get_bot(s, bot_id)
        assert old is not None and old.name == "Old"
        rule = add_rule(s, bot_id, conv_id)
    with Session(engine) as s:
        assert rule_rows.get_rule(s, rule.id) == rule


def test_migration_6_applied_again_changes_nothing(engine: Engine) -> None:
    run_migrations(engine, now=1.0)
    with Session(engine) as s, s.begin():
        bot_id = bots.insert_bot(s, id=new_id("b"), name="B", workspace="/ws", now=1.0).id
        conv_id = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot_id, title="C", now=1.0).id
        add_rule(s, bot_id, conv_id)
    with engine.begin() as conn:
        MIGRATIONS[5].apply(conn)  # create_all skips existing tables
    with Session(engine) as s:
        assert len(rule_rows.list_rules(s)) == 1


async def test_server_defaults_fill_a_rule_written_without_the_optional_columns(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)

    def raw_insert(s: Session) -> rule_rows.RuleRecord | None:
        s.execute(
            text(
                "INSERT INTO rules (id, bot_id, conversation_id, title, instruction, schedule, tz, "
                "created_at, updated_at) VALUES ('ru_raw', :b, :c, 'T', 'words', '{}', 'UTC', 5, 5)"
            ),
            {"b": bot_id, "c": conv_id},
        )
        return rule_rows.get_rule(s, "ru_raw")

    rule = await db.write(raw_insert)
    assert rule is not None
    assert (rule.kind, rule.mode, rule.version, rule.granted_preset) == ("check", "act", 1, "")
    assert (rule.next_run_at, rule.paused_reason, rule.failures_in_row) == (0.0, "", 0)


# -- migration 7: observe_ack_version and trigger --------------------------------------------------


def test_migration_7_adds_the_ack_and_trigger_columns_to_a_version_6_database(engine: Engine) -> None:
    assert run_migrations(engine, now=1.0, migrations=MIGRATIONS[:6]) == [1, 2, 3, 4, 5, 6]
    assert MIGRATIONS[6].version == 7
    with engine.begin() as conn:
        # Migration 6 builds `rules` from today's model; a build before migration 7 had neither column.
        conn.exec_driver_sql("ALTER TABLE rules DROP COLUMN observe_ack_version")
        conn.exec_driver_sql('ALTER TABLE rules DROP COLUMN "trigger"')
    columns = {c["name"] for c in inspect(engine).get_columns("rules")}
    assert not {"observe_ack_version", "trigger"} & columns
    with Session(engine) as s, s.begin():
        bot_id = bots.insert_bot(s, id=new_id("b"), name="Old", workspace="/ws", now=1.0).id
        conv_id = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot_id, title="C", now=1.0).id
        s.execute(
            text(
                "INSERT INTO rules (id, bot_id, conversation_id, title, instruction, schedule, tz, "
                "created_at, updated_at) VALUES ('ru_old', :b, :c, 'T', 'words', '{}', 'UTC', 5, 5)"
            ),
            {"b": bot_id, "c": conv_id},
        )

    assert run_migrations(engine, now=2.0, migrations=MIGRATIONS[:7]) == [7]
    assert run_migrations(engine, now=3.0, migrations=MIGRATIONS[:7]) == []

    assert {"observe_ack_version", "trigger"} <= {c["name"] for c in inspect(engine).get_columns("rules")}
    with Session(engine) as s:
        old = rule_rows.get_rule(s, "ru_old")
        assert old is not None
        assert (old.observe_ack_version, old.trigger) == (0, {"kind": "schedule"})
    with engine.begin() as conn:
        MIGRATIONS[6].apply(conn)  # add_column skips columns that are there


async def test_a_rule_stores_its_trigger_and_the_acknowledged_observe_version(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    event = {"kind": "event", "source": "github", "filter": {"repo": "a/b"}}
    created = await db.write(lambda s: add_rule(s, bot_id, conv_id, trigger=event))
    assert (created.trigger, created.observe_ack_version) == (event, 0)
    plain = await db.write(lambda s: add_rule(s, bot_id, conv_id))
    assert plain.trigger == {"kind": "schedule"}

    changed = await db.write(
        lambda s: rule_rows.update_rule(
            s, created.id, now=20.0, observe_ack_version=3, trigger={"kind": "schedule"}
        )
    )
    assert (changed.observe_ack_version, changed.trigger) == (3, {"kind": "schedule"})
    assert await db.read(lambda s: rule_rows.get_rule(s, created.id)) == changed


# -- repository ------------------------------------------------------------------------------------


async def test_a_rule_round_trips_with_its_schedule_and_first_version(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    created = await db.write(lambda s: add_rule(s, bot_id, conv_id, kind="remind", granted_preset="full"))

    assert created.id.startswith("ru_") and len(created.id) == len("ru_") + 12
    got = await db.read(lambda s: rule_rows.get_rule(s, created.id))
    assert got == created
    assert got.schedule == DAILY
    assert (got.kind, got.mode, got.version, got.granted_preset) == ("remind", "act", 1, "full")
    assert got.instruction == "每天早上 8 点看看 X 的价格,低于 200 告诉我"  # verbatim, not escaped
    versions = await db.read(lambda s: rule_rows.versions_of(s, created.id))
    assert [(v.version, v.instruction) for v in versions] == [(1, got.instruction)]
    assert await db.read(lambda s: rule_rows.get_rule(s, "ru_missing")) is None


async def test_list_rules_is_newest_first_and_filters_by_bot(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    other_bot, other_conv = await bot_and_conversation(db)
    first = await db.write(lambda s: add_rule(s, bot_id, conv_id, now=10.0))
    second = await db.write(lambda s: add_rule(s, bot_id, conv_id, now=20.0))
    theirs = await db.write(lambda s: add_rule(s, other_bot, other_conv, now=30.0))

    assert [r.id for r in await db.read(rule_rows.list_rules)] == [theirs.id, second.id, first.id]
    mine = await db.read(lambda s: rule_rows.list_rules(s, bot_id=bot_id))
    assert [r.id for r in mine] == [second.id, first.id]


async def test_bad_kinds_modes_and_duplicate_versions_are_refused(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    with pytest.raises(ValueError, match="rule kind"):
        await db.write(lambda s: add_rule(s, bot_id, conv_id, kind="watch"))
    with pytest.raises(ValueError, match="rule mode"):
        await db.write(lambda s: add_rule(s, bot_id, conv_id, mode="sometimes"))
    assert await db.read(rule_rows.list_rules) == []

    rule = await db.write(lambda s: add_rule(s, bot_id, conv_id))
    with pytest.raises(IntegrityError):
        await db.write(
            lambda s: rule_rows.insert_version(s, rule_id=rule.id, version=1, instruction="again", now=1.0)
        )


async def test_update_rule_changes_only_allowed_fields(db: Database, clock: FakeClock) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    rule = await db.write(lambda s: add_rule(s, bot_id, conv_id))
    weekly = {"kind": "weekly", "days": ["mon"], "time": "09:00", "tz": "UTC"}

    changed = await db.write(
        lambda s: rule_rows.update_rule(
            s, rule.id, now=50.0, mode="observe", schedule=weekly, tz="UTC", next_run_at=200.0, version=2
        )
    )
    assert (changed.mode, changed.schedule, changed.tz) == ("observe", weekly, "UTC")
    assert (changed.next_run_at, changed.version, changed.updated_at) == (200.0, 2, 50.0)
    assert changed.created_at == rule.created_at and changed.title == rule.title

    bad: dict[str, Any] = {"kind": "remind"}
    with pytest.raises(ValueError, match="cannot change \\['kind'\\]"):
        await db.write(lambda s: rule_rows.update_rule(s, rule.id, now=60.0, **bad))
    with pytest.raises(ValueError, match="paused reason"):
        tired: dict[str, Any] = {"paused_reason": "tired"}  # as a value from JSON would arrive
        await db.write(lambda s: rule_rows.update_rule(s, rule.id, now=60.0, **tired))
    with pytest.raises(NotFoundError):
        await db.write(lambda s: rule_rows.update_rule(s, "ru_missing", now=60.0, title="x"))
    assert await db.read(lambda s: rule_rows.get_rule(s, rule.id)) == changed


async def test_delete_rule_takes_its_versions_and_its_log_but_nothing_else(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    rule = await db.write(lambda s: add_rule(s, bot_id, conv_id))
    kept = await db.write(lambda s: add_rule(s, bot_id, conv_id, title="Kept"))

    def log_of(s: Session, rule_id: str) -> str:
        run_id = new_id("r")
        runs.insert_run(
            s,
            id=run_id,
            bot_id=bot_id,
            session_id=f"rule-{rule_id}-1",
            cause="schedule",
            now=1.0,
            rule_id=rule_id,
            rule_version=1,
        )
        run_inputs.insert_input(s, id=new_id("i"), kind="schedule", text="go", now=1.0, rule_id=rule_id)
        deliveries.insert_delivery(
            s,
            id=f"{run_id}:rule",
            bot_id=bot_id,
            conversation_id=conv_id,
            purpose="rule",
            text="hi",
            now=1.0,
            rule_id=rule_id,
            run_id=run_id,
        )
        return run_id

    await db.write(lambda s: log_of(s, rule.id))
    kept_run = await db.write(lambda s: log_of(s, kept.id))
    await db.write(
        lambda s: rule_rows.insert_version(s, rule_id=rule.id, version=2, instruction="v2", now=2.0)
    )

    assert await db.write(lambda s: rule_rows.delete_rule(s, rule.id)) is True
    assert await db.write(lambda s: rule_rows.delete_rule(s, rule.id)) is False

    def left(s: Session) -> dict[str, int]:
        counts = {}
        for table in ("rules", "rule_versions", "runs", "run_inputs", "deliveries"):
            counts[table] = s.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
        return counts

    assert await db.read(left) == {
        "rules": 1,
        "rule_versions": 1,
        "runs": 1,
        "run_inputs": 1,
        "deliveries": 1,
    }
    assert await db.read(lambda s: rule_rows.get_rule(s, kept.id)) == kept
    assert (await db.read(lambda s: runs.get_run(s, kept_run))) is not None


# -- the scheduler's reads and writes (issue 18: 10,000 rules) ---------------------------------------


async def test_set_next_runs_stores_every_rule_in_one_go_and_a_held_row_sees_it(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    a, b, c = [await db.write(lambda s: add_rule(s, bot_id, conv_id)) for _ in range(3)]

    def write(s: Session) -> tuple[float, float]:
        held = s.get(RuleRow, a.id)  # loaded before the bulk update, in the same transaction
        assert held is not None and held.next_run_at == 100.0
        rule_rows.set_next_runs(s, {a.id: 500.0, b.id: None}, now=42.0)
        return held.next_run_at, held.updated_at

    assert await db.write(write) == (500.0, 42.0)
    got = {r.id: r for r in await db.read(rule_rows.list_rules)}
    assert (got[a.id].next_run_at, got[a.id].updated_at) == (500.0, 42.0)
    assert (got[b.id].next_run_at, got[b.id].updated_at) == (0.0, 42.0)  # None: it will not run again
    assert (got[c.id].next_run_at, got[c.id].updated_at) == (100.0, 10.0)  # not named: untouched


async def test_the_scheduler_reads_only_due_rules_and_only_budget_paused_ones(db: Database) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    due = await db.write(lambda s: add_rule(s, bot_id, conv_id, next_run_at=50.0))
    await db.write(lambda s: add_rule(s, bot_id, conv_id, next_run_at=500.0))  # not due yet
    paused = await db.write(lambda s: add_rule(s, bot_id, conv_id, next_run_at=40.0))
    await db.write(lambda s: rule_rows.update_rule(s, paused.id, now=11.0, paused_reason="budget"))
    failing = await db.write(lambda s: add_rule(s, bot_id, conv_id, next_run_at=30.0))
    await db.write(lambda s: rule_rows.update_rule(s, failing.id, now=11.0, paused_reason="failures"))

    times = await db.read(lambda s: rule_rows.due_rule_times(s, now=100.0))
    assert [(t.id, t.bot_id, t.next_run_at, t.tz) for t in times] == [(due.id, bot_id, 50.0, "Asia/Shanghai")]
    assert rule_rows.decode_schedule(times[0].schedule_json) == DAILY
    assert [r.id for r in await db.read(rule_rows.budget_paused_rules)] == [paused.id]
    assert await db.read(rule_rows.budget_paused_zones) == ["Asia/Shanghai"]


async def test_scheduled_runs_take_their_rules_facts_and_numbers_and_a_gone_rule_gets_none(
    db: Database,
) -> None:
    bot_id, conv_id = await bot_and_conversation(db)
    check = await db.write(lambda s: add_rule(s, bot_id, conv_id, mode="observe"))
    remind = await db.write(lambda s: add_rule(s, bot_id, conv_id, kind="remind"))
    await db.write(lambda s: rule_rows.update_rule(s, check.id, now=11.0, version=2))
    before = await db.write(
        lambda s: runs.insert_run(
            s,
            id="r_before",
            bot_id=bot_id,
            session_id=f"rule-{check.id}-1",
            cause="manual",
            now=20.0,
            rule_id=check.id,
            rule_version=2,
            mode="observe",
        )
    )
    assert await db.read(runs.live_rule_ids) == {check.id}
    scheduled = [
        runs.ScheduledRun("r_skip", check.id, 50.0, "ended", "skipped", error="overlap", ended_at=60.0),
        runs.ScheduledRun("r_queued", check.id, 60.0, "queued"),
        runs.ScheduledRun(
            "r_done",
            remind.id,
            60.0,
            "ended",
            "done",
            report='{"state": "done"}',
            started_at=60.0,
            ended_at=60.0,
        ),
        runs.ScheduledRun("r_gone", "ru_gone", 60.0, "queued"),
    ]

    kept = await db.write(lambda s: runs.insert_scheduled_runs(s, scheduled, session_prefix="rule-"))

    assert kept == {check.id, remind.id}
    got = {r.id: r for r in await db.read(lambda s: runs.runs_of_rule(s, check.id))}
    assert set(got) == {before.id, "r_skip", "r_queued"}
    skip, queued = got["r_skip"], got["r_queued"]
    # Numbered after the rule's runs so far, each after the one inserted just before it.
    assert (skip.session_id, queued.session_id) == (f"rule-{check.id}-2", f"rule-{check.id}-3")
    assert (skip.bot_id, skip.rule_version, skip.mode, skip.cause) == (bot_id, 2, "observe", "schedule")
    assert (skip.state, skip.outcome, skip.error, skip.queued_at, skip.ended_at) == (
        "ended",
        "skipped",
        "overlap",
        50.0,
        60.0,
    )
    assert (queued.state, queued.outcome, queued.started_at, queued.ended_at) == ("queued", "", 0.0, 0.0)
    done = await db.read(lambda s: runs.get_run(s, "r_done"))
    assert done is not None
    assert (done.session_id, done.mode, done.state, done.outcome, done.report) == (
        f"rule-{remind.id}-1",
        "act",
        "ended",
        "done",
        '{"state": "done"}',
    )
    assert (done.started_at, done.ended_at, done.error, done.error_words, done.activity) == (
        60.0,
        60.0,
        "",
        {},
        [],
    )
    assert await db.read(lambda s: runs.get_run(s, "r_gone")) is None
