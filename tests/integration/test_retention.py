"""Retention against a real SQLite file and real folders (docs/retention.md): 35 days
with a pass each day, a restart in the middle, a machine off for a month, and the sweeper's own timer."""

from __future__ import annotations

import asyncio
import functools
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import TaskChanged
from core.clock import FakeClock
from core.ids import new_id
from core.store import approvals, bots, conversations, deliveries, run_inputs, runs, tasks
from core.store import retention as retention_rows
from core.store import rules as rule_rows
from core.store.database import Database
from core.store.models import TaskRow
from core.store.tasks import TaskRecord
from core.tasks import retention_sweeper
from core.tasks.folders import task_folder
from core.tasks.retention import DAY_S
from core.tasks.retention_sweeper import RetentionReport, RetentionSweeper
from tests.waiting import yield_until

ZONE = "Asia/Shanghai"
# Day 35 of the simulation is 2026-12-31 20:00 in Shanghai, so the rule run of December 1st is more than 30
# days old then, and still kept: it is in the rule's current month.
T0 = datetime(2026, 11, 26, 20, 0, tzinfo=ZoneInfo(ZONE)).timestamp()


def day(n: float) -> float:
    return T0 + n * DAY_S


@dataclass
class Sessions:
    """Session files as the agent runtime keeps them (`sessions/<id>/`); an open session can't be deleted."""

    root: Path
    open: set[str] = field(default_factory=set)
    deleted: list[str] = field(default_factory=list)

    def write(self, session_id: str) -> None:
        (self.root / session_id).mkdir(parents=True, exist_ok=True)
        (self.root / session_id / "history.jsonl").write_text('{"parts": []}\n')

    def exists(self, session_id: str) -> bool:
        return (self.root / session_id).exists()

    def is_open(self, session_id: str) -> bool:
        return session_id in self.open

    async def delete(self, session_id: str) -> bool:
        if session_id in self.open:
            return False
        await asyncio.to_thread(shutil.rmtree, self.root / session_id, True)
        self.deleted.append(session_id)
        return True


@dataclass
class World:
    data_dir: Path
    workspace: Path
    clock: FakeClock
    bus: EventBus
    sessions: Sessions
    db: Database
    sweeper: RetentionSweeper
    bot_id: str = ""
    conversation_id: str = ""

    async def reopen(self) -> None:
        """A restart: the sweeper and database go, new ones open on the same data dir."""
        await self.sweeper.stop()
        await self.db.close()
        self.db = Database.for_data_dir(self.data_dir, clock=self.clock)
        await self.db.open()
        self.sweeper = new_sweeper(self.db, self.clock, self.bus, self.sessions)

    async def task(self, task_id: str) -> TaskRecord:
        found = await self.db.read(lambda s: tasks.get_task(s, task_id))
        assert found is not None
        return found

    async def add_task(self, title: str, *, files: int = 1, folder: bool = True) -> TaskRecord:
        task_id = new_id("t")
        path = task_folder(self.workspace, title, task_id)
        if folder:
            path.mkdir(parents=True)
            for i in range(files):
                (path / f"notes-{i}.md").write_text("# findings\n" * 20)
        now = self.clock.time()
        record = await self.db.write(
            lambda s: tasks.insert_task(
                s,
                id=task_id,
                bot_id=self.bot_id,
                conversation_id=self.conversation_id,
                title=title,
                brief=title,
                session_id=f"task-{task_id}",
                folder=str(path),
                permission="workspace-write",
                budget_usd=1.0,
                now=now,
            )
        )
        self.sessions.write(record.session_id)
        return record

    async def add_runs(self, task: TaskRecord, count: int, *, end: bool = True) -> list[str]:
        """`count` runs of the task, one minute apart, each with the input it took; the last one stays live
        when `end` is False."""
        now = self.clock.time()
        ids = [new_id("r") for _ in range(count)]

        def add(s: Session) -> None:
            for i, run_id in enumerate(ids):
                at = now + i * 60
                runs.insert_run(
                    s,
                    id=run_id,
                    bot_id=self.bot_id,
                    session_id=task.session_id,
                    cause="launch",
                    now=at,
                    task_id=task.id,
                )
                runs.set_run_state(s, run_id, "running", now=at + 1)
                runs.update_run(s, run_id, activity=[{"kind": "tool", "text": "ls " * 50}], tokens_in=100)
                input_id = new_id("i")
                run_inputs.insert_input(
                    s, id=input_id, kind="followup", text="go on", now=at, task_id=task.id
                )
                run_inputs.mark_delivered(s, input_id, run_id=run_id, now=at)
                run_inputs.mark_taken(s, input_id, now=at + 1)
                if end or i < count - 1:
                    runs.end_run(s, run_id, outcome="done", now=at + 30)

        await self.db.write(add)
        return ids


def new_sweeper(db: Database, clock: FakeClock, bus: EventBus, sessions: Sessions) -> RetentionSweeper:
    return RetentionSweeper(db, clock, bus, delete_session=sessions.delete, session_open=sessions.is_open)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    clock = FakeClock(start=T0)
    data_dir = tmp_path / "data"
    db = Database.for_data_dir(data_dir, clock=clock)
    await db.open()
    bus = EventBus()
    sessions = Sessions(data_dir / "sessions")
    w = World(
        data_dir,
        data_dir / "bots" / "b" / "workspace",
        clock,
        bus,
        sessions,
        db,
        new_sweeper(db, clock, bus, sessions),
    )

    def base(s: Session) -> tuple[str, str]:
        bot = bots.insert_bot(s, id=new_id("b"), name="Bot", workspace=str(w.workspace), now=T0)
        conv = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot.id, title="Chat", now=T0)
        return bot.id, conv.id

    w.bot_id, w.conversation_id = await db.write(base)
    yield w
    await w.sweeper.stop()
    await w.db.close()


async def ask(w: World, task: TaskRecord) -> str:
    question_id = new_id("q")

    def add(s: Session) -> None:
        approvals.insert_approval(
            s,
            id=question_id,
            kind="question",
            bot_id=w.bot_id,
            conversation_id=w.conversation_id,
            text="Which city?",
            now=w.clock.time(),
            task_id=task.id,
            code="1234",
        )
        deliveries.insert_delivery(
            s,
            id=f"{question_id}:ask",
            bot_id=w.bot_id,
            conversation_id=w.conversation_id,
            task_id=task.id,
            purpose="question",
            text="Which city?",
            now=w.clock.time(),
        )
        deliveries.set_delivery_status(s, f"{question_id}:ask", "held", held_reason="quiet_hours")

    await w.db.write(add)
    return question_id


async def add_rule_run(w: World, rule_id: str, at: float) -> str:
    run_id = new_id("r")

    def add(s: Session) -> None:
        runs.insert_run(
            s,
            id=run_id,
            bot_id=w.bot_id,
            session_id=f"rule-{rule_id}-1",
            cause="schedule",
            now=at,
            rule_id=rule_id,
        )
        runs.set_run_state(s, run_id, "running", now=at)
        runs.end_run(s, run_id, outcome="done", now=at + 60)

    await w.db.write(add)
    return run_id


async def add_rule(w: World) -> str:
    rule_id = new_id("ru")

    def add(s: Session) -> None:
        rule_rows.insert_rule(
            s,
            id=rule_id,
            bot_id=w.bot_id,
            conversation_id=w.conversation_id,
            title="X price",
            instruction="check X",
            schedule={"kind": "daily", "time": "08:00", "tz": ZONE},
            tz=ZONE,
            now=T0,
        )
        rule_rows.insert_version(s, rule_id=rule_id, version=1, instruction="check X", now=T0)

    await w.db.write(add)
    return rule_id


async def keep(w: World, task_id: str) -> None:
    """保留, or any use, as the lead's TaskService records it: last used now, no deletion date."""
    now = w.clock.time()
    await w.db.write(lambda s: tasks.update_task(s, task_id, now=now, last_used_at=now, cleanup_at=0))


def exists(path: str) -> bool:
    return Path(path).exists()


def has_files(task: TaskRecord) -> bool:
    return any(p.is_file() for p in Path(task.folder).rglob("*"))


async def test_35_days_of_daily_passes_with_a_restart_on_day_28(world: World) -> None:
    w = world
    left = await w.add_task("Research A")
    right = await w.add_task("Research B", files=3)
    kept = await w.add_task("Keep me")
    empty = await w.add_task("Nothing written", files=0)
    missing = await w.add_task("No folder", folder=False)
    busy = await w.add_task("Long job")
    left_runs = await w.add_runs(left, 3)
    kept_runs = await w.add_runs(kept, 2)
    await w.add_runs(busy, 2, end=False)
    question = await ask(w, left)
    rule_id = await add_rule(w)
    november_run = await add_rule_run(w, rule_id, day(3))  # 2026-11-29 in Shanghai
    december_first = datetime(2026, 12, 1, 0, 30, tzinfo=ZoneInfo(ZONE)).timestamp()
    december_run = await add_rule_run(w, rule_id, december_first)
    published: list[object] = []
    w.bus.subscribe(published.append)

    reports: dict[int, RetentionReport] = {}
    for n in range(1, 36):
        w.clock.advance(DAY_S)
        if n == 20:  # 保留: the lead's TaskService sets last use to now and clears the date
            await keep(w, kept.id)
        if n == 28:
            dated_before = {t.id: (await w.task(t.id)).cleanup_at for t in (left, right)}
            await w.reopen()
        if n == 30:
            w.sessions.open.add(right.session_id)  # open in the runtime right now: deleted a day later
        if n == 31:
            w.sessions.open.clear()
        reports[n] = await w.sweeper.run_pass()
        if n == 26:
            assert [reports[d] for d in range(1, 27)] == [RetentionReport()] * 26
        if n == 27:
            assert reports[27].dated == 2
            for t in (left, right):
                assert (await w.task(t.id)).cleanup_at == day(30)  # 3 days' notice
            for t in (kept, empty, missing, busy):
                assert (await w.task(t.id)).cleanup_at == 0
        if n == 28:
            assert reports[28].dated == 0  # the date set before the restart holds, it is not set again
            assert {t.id: (await w.task(t.id)).cleanup_at for t in (left, right)} == dated_before
        if n == 29:
            assert has_files(left) and has_files(right)
        if n == 30:
            # left, right, empty and missing; not kept (保留), not busy (a live run)
            assert reports[30].archived == 4
            assert (reports[30].deleted_folders, reports[30].deferred) == (1, 1)
            assert not exists(left.folder) and not w.sessions.exists(left.session_id)
            assert has_files(right) and w.sessions.exists(right.session_id)
            assert (await w.task(right.id)).cleanup_at == day(30)  # left in place for the next pass
        if n == 31:
            assert (reports[31].deleted_folders, reports[31].archived, reports[31].dated) == (1, 0, 0)
            assert not exists(right.folder) and not w.sessions.exists(right.session_id)

    # Archived: hidden from lists and closed for follow-ups; the rows stay, with no deletion date left.
    for t in (left, right, empty, missing):
        record = await w.task(t.id)
        assert (record.archived_at, record.end_reason, record.cleanup_at) == (day(30), "archived", 0)
        assert record.ended_at > 0
        assert record.updated_at == t.updated_at  # a pass is not a use
    for t in (kept, busy):
        record = await w.task(t.id)
        assert (record.archived_at, record.end_reason) == (0, "")
    assert has_files(kept) and w.sessions.exists(kept.session_id)
    assert exists(empty.folder)  # empty folders never get a date (nothing to free)
    assert w.sessions.deleted == [left.session_id, right.session_id]

    # The open question of an archived task is withdrawn, its held push dropped.
    closed = await w.db.read(lambda s: approvals.get_approval(s, question))
    assert closed is not None and closed.status == "withdrawn"
    ask_push = await w.db.read(lambda s: deliveries.get_delivery(s, f"{question}:ask"))
    assert ask_push is not None and ask_push.status == "dropped"

    # Run logs older than 30 days went, but each task's latest run stayed, as did live runs and this month's
    # rule run; the inputs the pruned runs had taken went with them.
    # They ended seconds after day 0 began: pruned on day 31. Two of left's three, kept's and busy's first.
    assert (reports[30].pruned_runs, reports[31].pruned_runs, reports[31].pruned_inputs) == (0, 4, 4)
    left_left = await w.db.read(lambda s: runs.runs_of_task(s, left.id))
    assert [r.id for r in left_left] == left_runs[-1:]
    assert [r.id for r in await w.db.read(lambda s: runs.runs_of_task(s, kept.id))] == kept_runs[-1:]
    busy_runs = await w.db.read(lambda s: runs.runs_of_task(s, busy.id))
    assert [r.state for r in busy_runs] == ["running"]  # its latest, live
    left_inputs = await w.db.read(lambda s: run_inputs.inputs_of_task(s, left.id))
    assert [i.run_id for i in left_inputs] == left_runs[-1:]
    rule_runs = [r.id for r in await w.db.read(lambda s: runs.runs_of_rule(s, rule_id))]
    assert rule_runs == [december_run]
    assert november_run not in rule_runs
    # The November rule run ended a minute after day 3 began: 30 days old on day 34, and not this month.
    assert (reports[33].pruned_runs, reports[34].pruned_runs) == (0, 1)

    # No needs-you row and no notification: nothing but TaskChanged, for the tasks that changed.
    assert all(isinstance(e, TaskChanged) for e in published)
    changed = {e.task_id for e in published if isinstance(e, TaskChanged)}
    assert changed == {left.id, right.id, empty.id, missing.id, kept.id, busy.id}  # runs pruned too
    counts = await w.db.read(retention_rows.counts)
    assert (counts.archived, counts.dated, counts.open_questions) == (4, 0, 0)


async def test_a_machine_off_for_a_month_gets_3_days_not_an_immediate_delete(world: World) -> None:
    w = world
    task = await w.add_task("Before the holiday")
    w.clock.advance(10 * DAY_S)
    assert await w.sweeper.run_pass() == RetentionReport()
    w.clock.advance(30 * DAY_S)  # off from day 10 to day 40
    report = await w.sweeper.run_pass()
    assert (report.archived, report.dated, report.deleted_folders) == (1, 1, 0)
    assert (await w.task(task.id)).cleanup_at == day(43)
    w.clock.advance(2.9 * DAY_S)
    assert (await w.sweeper.run_pass()).deleted_folders == 0
    assert has_files(task)
    w.clock.advance(0.1 * DAY_S)
    assert (await w.sweeper.run_pass()).deleted_folders == 1
    assert not exists(task.folder) and not w.sessions.exists(task.session_id)
    assert (await w.task(task.id)).cleanup_at == 0
    assert await w.sweeper.run_pass() == RetentionReport()  # an archived task with no folder is done with


async def test_use_after_the_date_is_set_keeps_the_folder(world: World) -> None:
    w = world
    task = await w.add_task("Used again")
    w.clock.advance(27 * DAY_S)
    assert (await w.sweeper.run_pass()).dated == 1
    w.clock.advance(DAY_S)
    # A follow-up on day 28 counts as use (the lead's TaskService); the date is gone and 30 days restart.
    await keep(w, task.id)
    w.clock.advance(5 * DAY_S)
    assert await w.sweeper.run_pass() == RetentionReport()
    assert has_files(task)
    w.clock.advance(22 * DAY_S)  # day 55 = 27 days after the use
    report = await w.sweeper.run_pass()
    assert report.dated == 1
    assert (await w.task(task.id)).cleanup_at == day(58)


async def test_a_run_in_flight_holds_the_deletion(world: World) -> None:
    w = world
    task = await w.add_task("Slow")
    w.clock.advance(27 * DAY_S)
    await w.sweeper.run_pass()
    await w.add_runs(task, 1, end=False)  # e.g. a run recovery re-queued without counting it as use
    w.clock.advance(5 * DAY_S)
    report = await w.sweeper.run_pass()
    assert (report.archived, report.deleted_folders) == (0, 0)
    assert has_files(task)


async def test_a_dated_archived_task_kept_after_archiving_is_dated_again_later(world: World) -> None:
    w = world
    task = await w.add_task("Archived then kept")
    w.sessions.open.add(task.session_id)
    w.clock.advance(30 * DAY_S)
    report = await w.sweeper.run_pass()
    assert (report.archived, report.dated) == (1, 1)
    # 保留 from the task detail of the archived task on day 31: its folder stays another 30 days.
    w.clock.advance(DAY_S)
    await keep(w, task.id)
    w.sessions.open.clear()
    w.clock.advance(27 * DAY_S)  # day 58 = 27 days after 保留
    report = await w.sweeper.run_pass()
    assert (report.archived, report.dated) == (0, 1)
    assert (await w.task(task.id)).cleanup_at == day(61)


async def test_the_sweeper_runs_on_its_own_timer_and_when_poked(world: World) -> None:
    w = world
    passes: asyncio.Queue[RetentionReport] = asyncio.Queue()
    w.sweeper = RetentionSweeper(
        w.db,
        w.clock,
        w.bus,
        delete_session=w.sessions.delete,
        session_open=w.sessions.is_open,
        interval_s=3600,
        on_pass=passes.put_nowait,
    )
    task = await w.add_task("Timer")
    w.sweeper.start()
    await asyncio.wait_for(passes.get(), 5)  # one pass at once
    await until_asleep(w.clock)
    w.clock.advance(27 * DAY_S)  # one sleep ends, however long the time jumped
    assert (await asyncio.wait_for(passes.get(), 5)).dated == 1
    await until_asleep(w.clock)
    w.clock.jump_wall(3 * DAY_S)  # a clock change: no sleep ends, the host pokes
    w.sweeper.poke()
    assert (await asyncio.wait_for(passes.get(), 5)).deleted_folders == 1
    assert not exists(task.folder)
    await w.sweeper.stop()
    assert passes.empty()


async def until_asleep(clock: FakeClock) -> None:
    await yield_until(lambda: clock.sleeper_count > 0, "the sweeper went to sleep", rounds=200)


async def test_old_runs_are_pruned_page_by_page(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    w = world
    monkeypatch.setattr(retention_sweeper, "RUN_PAGE", 3)
    monkeypatch.setattr(retention_sweeper, "PRUNE_BATCH", 2)
    made = {}
    for name in ("One", "Two", "Three"):
        task = await w.add_task(name, folder=False)
        made[task.id] = await w.add_runs(task, 4)
    w.clock.advance(31 * DAY_S)
    report = await w.sweeper.run_pass()
    assert (report.pruned_runs, report.pruned_inputs) == (9, 9)
    for task_id, run_ids in made.items():
        left = await w.db.read(functools.partial(runs.runs_of_task, task_id=task_id))
        assert [r.id for r in left] == run_ids[-1:]
    assert (await w.sweeper.run_pass()).pruned_runs == 0


async def test_a_session_that_cannot_be_deleted_waits_and_the_pass_goes_on(world: World) -> None:
    w = world
    task = await w.add_task("Stuck session")

    async def refuse(session_id: str) -> bool:
        raise RuntimeError(f"session {session_id} is still open")

    w.sweeper = RetentionSweeper(w.db, w.clock, w.bus, delete_session=refuse, session_open=lambda _sid: False)
    w.clock.advance(27 * DAY_S)
    await w.sweeper.run_pass()
    w.clock.advance(3 * DAY_S)
    report = await w.sweeper.run_pass()
    assert (report.archived, report.deleted_folders, report.deferred) == (1, 0, 1)
    assert (await w.task(task.id)).cleanup_at == day(30)  # kept for the next pass
    w.sweeper = new_sweeper(w.db, w.clock, w.bus, w.sessions)
    assert (await w.sweeper.run_pass()).deleted_folders == 1
    assert not w.sessions.exists(task.session_id)


async def test_a_folder_outside_the_bots_workspace_is_never_deleted(world: World, tmp_path: Path) -> None:
    w = world
    task = await w.add_task("Moved workspace")
    elsewhere = tmp_path / "elsewhere" / "tasks" / "moved"
    await asyncio.to_thread(shutil.copytree, task.folder, elsewhere)
    await w.db.write(
        lambda s: s.execute(update(TaskRow).where(TaskRow.id == task.id).values(folder=str(elsewhere)))
    )
    w.clock.advance(30 * DAY_S)
    await w.sweeper.run_pass()
    w.clock.advance(3 * DAY_S)
    assert (await w.sweeper.run_pass()).deleted_folders == 1  # the session files go, the date is cleared
    assert await asyncio.to_thread(any, elsewhere.iterdir())
    assert not w.sessions.exists(task.session_id)
