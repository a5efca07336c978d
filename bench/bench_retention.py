"""Figures for retention (issue 7 item 5, docs/retention.md).
Run: .venv/bin/python -m bench.bench_retention [--tasks N]

10,000 simulated tasks are written into a real SQLite file: tasks, rules and questions through the store
repositories; their 1-5 runs (each with some activity JSON) and the inputs those took as batched INSERTs of
the rows the run repositories would leave (ten times quicker to build). Every 10th task has an open question,
500 have a folder with one small file and session files, and 20 rules ran 4 times a day for 45 days. The
clock then stands 40 days after the first task: a quarter of the tasks are 40 days idle, a quarter 28, a
quarter 20, the rest 2.

Printed: the database file size before and after one pass (and after VACUUM), the time of that first pass
(median and max over fresh copies of the same database), the time of a pass with nothing left to do, the
longest the event loop waited during a pass (the work runs on the database thread and in `to_thread`), and the
counts before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy import insert, text
from sqlalchemy.orm import Session

from bench.common import line
from core.bus import EventBus
from core.clock import FakeClock
from core.ids import new_id
from core.store import approvals, bots, conversations, tasks
from core.store import retention as retention_rows
from core.store import rules as rule_rows
from core.store.database import DB_FILE_NAME, Database
from core.store.models import RunInputRow, RunRow
from core.store.retention import RetentionCounts
from core.tasks.folders import task_folder
from core.tasks.retention import DAY_S
from core.tasks.retention_sweeper import RetentionReport, RetentionSweeper

T = TypeVar("T")
T0 = 1_790_000_000.0
NOW = T0 + 40 * DAY_S
IDLE_DAYS = (40, 28, 20, 2)  # a quarter of the tasks each
STEP = {"kind": "tool", "name": "bash", "args": {"command": "grep -rn 'price' data/ | head -40"}, "ok": True}
ACTIVITY = {n: json.dumps([STEP] * n) for n in range(1, 26)}


@dataclass(frozen=True)
class Built:
    db_file: Path
    workspace: Path
    sessions: Path
    tasks: int
    runs: int
    folders: int


def _run_row(run_id: str, bot_id: str, at: float, steps: int, **owner: str) -> dict[str, object]:
    """A finished run as `runs.insert_run` + `set_run_state` + `update_run` + `end_run` would leave it."""
    return {
        "id": run_id,
        "bot_id": bot_id,
        "task_id": owner.get("task_id", ""),
        "rule_id": owner.get("rule_id", ""),
        "session_id": owner["session_id"],
        "cause": "launch" if owner.get("task_id") else "schedule",
        "state": "ended",
        "outcome": "done",
        "report": '{"state": "done", "summary": "ok"}',
        "activity": ACTIVITY[steps],
        "tokens_in": 1200,
        "tokens_out": 300,
        "queued_at": at,
        "started_at": at + 1,
        "ended_at": at + 300,
    }


def _task_rows(s: Session, bot_id: str, conv_id: str, workspace: Path, first: int, n: int) -> list[str]:
    """Tasks `first`..`first + n - 1`, each last used IDLE_DAYS[i % 4] days before NOW, with 1-5 runs and the
    inputs they took, an open question on every 10th; returns the folders of 500 in 10,000 (all ages)."""
    rng = random.Random(first)
    with_folder = []
    run_rows: list[dict[str, object]] = []
    input_rows: list[dict[str, object]] = []
    for i in range(first, first + n):
        used = NOW - IDLE_DAYS[i % len(IDLE_DAYS)] * DAY_S - rng.uniform(0, 3600)
        task_id = new_id("t")
        folder = task_folder(workspace, f"Research {i}", task_id)
        tasks.insert_task(
            s,
            id=task_id,
            bot_id=bot_id,
            conversation_id=conv_id,
            title=f"Research {i}",
            brief="Find out what X costs across the three shops and report back with a table. " * 3,
            session_id=f"task-{task_id}",
            folder=str(folder),
            permission="workspace-write",
            budget_usd=1.0,
            now=used - 3600,
        )
        for r in range(rng.randint(1, 5)):
            at = used - 3600 + r * 600
            run_id = new_id("r")
            steps = rng.randint(5, 25)
            run_rows.append(
                _run_row(run_id, bot_id, at, steps, task_id=task_id, session_id=f"task-{task_id}")
            )
            input_rows.append(
                {
                    "id": new_id("i"),
                    "task_id": task_id,
                    "run_id": run_id,
                    "kind": "followup",
                    "text": "go on " * 20,
                    "delivered_at": at,
                    "taken_at": at + 1,
                    "created_at": at,
                }
            )
        tasks.update_task(s, task_id, now=used, last_used_at=used, ended_at=used, end_reason="done")
        if i % 10 == 0:
            approvals.insert_approval(
                s,
                id=new_id("q"),
                kind="question",
                bot_id=bot_id,
                conversation_id=conv_id,
                text="Which shop?",
                now=used,
                task_id=task_id,
            )
        if (i // 4) % 20 == 0:
            with_folder.append(str(folder))
    s.execute(insert(RunRow), run_rows)
    s.execute(insert(RunInputRow), input_rows)
    return with_folder


def _rule_rows(s: Session, bot_id: str, conv_id: str, rules: int) -> None:
    """Rules with 4 runs a day for the last 45 days."""
    run_rows: list[dict[str, object]] = []
    for r in range(rules):
        rule_id = new_id("ru")
        rule_rows.insert_rule(
            s,
            id=rule_id,
            bot_id=bot_id,
            conversation_id=conv_id,
            title=f"Rule {r}",
            instruction="check X",
            schedule={"kind": "daily", "time": "08:00", "tz": "Asia/Shanghai"},
            tz="Asia/Shanghai",
            now=T0,
        )
        rule_rows.insert_version(s, rule_id=rule_id, version=1, instruction="check X", now=T0)
        for k in range(45 * 4):
            at = NOW - 45 * DAY_S + k * DAY_S / 4
            run_rows.append(
                _run_row(new_id("r"), bot_id, at, 4, rule_id=rule_id, session_id=f"rule-{rule_id}-{k}")
            )
    if run_rows:
        s.execute(insert(RunRow), run_rows)


async def build(root: Path, n: int, rules: int) -> Built:
    clock = FakeClock(start=T0)
    data = root / "data"
    workspace = root / "workspace"
    sessions = root / "sessions"
    db = Database.for_data_dir(data, clock=clock)
    await db.open()

    def base(s: Session) -> tuple[str, str]:
        bot = bots.insert_bot(s, id=new_id("b"), name="Bot", workspace=str(workspace), now=T0)
        conv = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot.id, title="Chat", now=T0)
        return bot.id, conv.id

    bot_id, conv_id = await db.write(base)
    folders: list[str] = []
    for first in range(0, n, 1000):
        rows = functools.partial(_task_rows, bot_id=bot_id, conv_id=conv_id, workspace=workspace)
        folders += await db.write(functools.partial(rows, first=first, n=min(1000, n - first)))
    await db.write(lambda s: _rule_rows(s, bot_id, conv_id, rules))
    counts = await db.read(retention_rows.counts)
    await db.close()
    await asyncio.to_thread(_make_folders, folders, sessions)
    _checkpoint(data / DB_FILE_NAME)
    return Built(data / DB_FILE_NAME, workspace, sessions, n, counts.runs, len(folders))


def _make_folders(folders: list[str], sessions: Path) -> None:
    """One small file in each task folder, and the task's session history."""
    for folder in folders:
        path = Path(folder)
        path.mkdir(parents=True)
        (path / "report.md").write_text("# Prices\n" + "| shop | price |\n" * 40)
        session = sessions / f"task-t_{path.name.rsplit('-', 1)[-1]}"
        session.mkdir(parents=True, exist_ok=True)
        (session / "history.jsonl").write_text('{"parts": []}\n' * 50)


def _checkpoint(db_file: Path) -> None:
    with sqlite3.connect(db_file) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _vacuumed_size(db_file: Path) -> int:
    copy = db_file.with_name("vacuum.db")
    shutil.copyfile(db_file, copy)
    conn = sqlite3.connect(copy)
    conn.execute("VACUUM")
    conn.close()
    size = copy.stat().st_size
    copy.unlink()
    return size


class Sessions:
    def __init__(self, root: Path) -> None:
        self.root = root

    async def delete(self, session_id: str) -> bool:
        await asyncio.to_thread(shutil.rmtree, self.root / session_id, True)
        return True


@dataclass(frozen=True)
class Timed:
    seconds: float
    loop_wait_s: float  # the longest gap between two ticks of the event loop
    db_wait_s: float  # the longest a small read waited for the database thread (what a chat write would)


async def _timed(db: Database, fn: Callable[[], Awaitable[T]]) -> tuple[T, Timed]:
    loop_wait = db_wait = 0.0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal loop_wait
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            loop_wait = max(loop_wait, now - last)
            last = now

    async def prober() -> None:
        nonlocal db_wait
        while not stop.is_set():
            started = time.perf_counter()
            await db.read(lambda s: s.execute(text("SELECT 1")).scalar())
            db_wait = max(db_wait, time.perf_counter() - started)
            await asyncio.sleep(0.005)

    helpers = [asyncio.create_task(ticker()), asyncio.create_task(prober())]
    started = time.perf_counter()
    result = await fn()
    elapsed = time.perf_counter() - started
    stop.set()
    await asyncio.gather(*helpers)
    return result, Timed(elapsed, loop_wait, db_wait)


@dataclass
class Copy:
    first: RetentionReport
    first_t: Timed
    again: list[Timed]
    deleting: RetentionReport
    deleting_t: Timed
    after: RetentionCounts
    size_after: int


async def one_copy(built: Built, root: Path, repeats: int) -> Copy:
    """A fresh copy of the database, folders and sessions; one pass at NOW, then passes with nothing to do."""
    for path in (root, built.workspace, built.sessions):
        shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(built.workspace.with_name("workspace-pristine"), built.workspace)
    shutil.copytree(built.sessions.with_name("sessions-pristine"), built.sessions)
    (root / "data").mkdir(parents=True)
    shutil.copyfile(built.db_file, root / "data" / DB_FILE_NAME)
    clock = FakeClock(start=NOW)
    db = Database.for_data_dir(root / "data", clock=clock)
    await db.open()
    sessions = Sessions(built.sessions)
    sweeper = RetentionSweeper(
        db, clock, EventBus(), delete_session=sessions.delete, session_open=lambda _s: False
    )
    first, first_t = await _timed(db, sweeper.run_pass)
    again = []
    for _ in range(repeats):
        clock.advance(3600)
        again.append((await _timed(db, sweeper.run_pass))[1])
    clock.advance(3 * DAY_S)  # the dates set by the first pass have come
    deleting, deleting_t = await _timed(db, sweeper.run_pass)
    after = await db.read(retention_rows.counts)
    await db.close()
    _checkpoint(root / "data" / DB_FILE_NAME)
    size = await asyncio.to_thread(lambda: (root / "data" / DB_FILE_NAME).stat().st_size)
    return Copy(first, first_t, again, deleting, deleting_t, after, size)


def _figures(label: str, timed: list[Timed]) -> None:
    line(label, _ms([t.seconds for t in timed]))
    line("  longest event-loop wait meanwhile", _ms([t.loop_wait_s for t in timed]))
    line("  longest wait of a small database read meanwhile", _ms([t.db_wait_s for t in timed]))


def _ms(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"median {statistics.median(ms):8.1f} ms   max {max(ms):8.1f} ms   (n={len(ms)})"


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="errand-retention-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        built = await build(root / "built", args.tasks, args.rules)
        line("built (tasks / runs / folders)", f"{built.tasks} / {built.runs} / {built.folders}")
        line("build time", f"{time.perf_counter() - started:.1f} s")
        built.workspace.rename(built.workspace.with_name("workspace-pristine"))
        built.sessions.rename(built.sessions.with_name("sessions-pristine"))
        size_before = built.db_file.stat().st_size
        line("database before (bytes)", f"{size_before:,}")
        line("database before, after VACUUM (bytes)", f"{_vacuumed_size(built.db_file):,}")
        db = Database.for_data_dir(built.db_file.parent)
        await db.open()
        before = await db.read(retention_rows.counts)
        await db.close()

        copies = [await one_copy(built, root / f"copy-{i}", args.repeats) for i in range(args.copies)]
        last = copies[-1]
        _figures("first pass at day 40 (fresh copies)", [c.first_t for c in copies])
        _figures("pass with nothing to do (an hour later)", [t for c in copies for t in c.again])
        report = last.first
        line(
            "first pass did",
            f"{report.archived} archived, {report.dated} dated, {report.deleted_folders} folders deleted, "
            f"{report.pruned_runs} runs and {report.pruned_inputs} inputs pruned",
        )
        _figures("pass 3 days later (deletes the dated folders)", [c.deleting_t for c in copies])
        line("  it did", f"{last.deleting.deleted_folders} folders and session histories deleted")
        line("database after the passes (bytes)", f"{last.size_after:,}")
        after_file = root / f"copy-{args.copies - 1}" / "data" / DB_FILE_NAME
        line("database after the passes, after VACUUM (bytes)", f"{_vacuumed_size(after_file):,}")
        for name in ("tasks", "archived", "dated", "runs", "run_inputs", "open_questions"):
            line(f"  {name} before -> after", f"{getattr(before, name):>7} -> {getattr(last.after, name):>7}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_retention")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rules", type=int, default=20, help="rules, each with 4 runs a day for 45 days")
    parser.add_argument("--copies", type=int, default=3, help="fresh copies for the first pass")
    parser.add_argument("--repeats", type=int, default=3, help="passes with nothing to do per copy")
    args = parser.parse_args(argv)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
