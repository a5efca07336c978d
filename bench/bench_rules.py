"""Figures for the rule scheduler (docs/runs.md). Run: .venv/bin/python -m bench.bench_rules [--quick]

- precision: how late the Scheduler fires (fire time minus due time: median, p99, max) for 30 rules due at
  staggered times over ~60 s of real time, on the SystemClock, idle and while four background task runs
  step through shell calls on the same loop (a real Host, bench/streaming_model.py as the model, in its own
  process). The rules live in an in-memory RuleTimeline with arbitrary epoch due times (`once` rules in the
  store have minute resolution), so this measures the timer and the loop, not the store. Target (DESIGN.md):
  within 1 s of due, p99.
- recompute after a resume for 10,000 rules in a real host's SQLite: `host.scheduler.recompute("resume")`,
  median of a few runs, for a realistic mix (1% missed, a few reminders due within their grace, the rest
  ahead) and for the worst case (all 10,000 missed: each recorded `skipped`). Then where the time goes: the
  time per RuleTimeline call, and cProfile of the database worker thread (where StoredTimeline's work runs).
  The `before` figure is the same measurement at commit 72f39f1 on the build machine, before issue 18 read
  only the due rules' columns (not whole records), filtered budget-paused rules in SQL (not every rule
  decoded twice in Python), parsed each distinct schedule once and stored the next runs in one executemany
  (not one UPDATE per rule). Targets (issue 18): 150 ms for the mix, 500 ms when all are missed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from bench.common import line, percentile
from core.agent.model_config import ModelConfig, RetryPolicy
from core.clock import SystemClock
from core.host import Host
from core.rules.schedule import Schedule, next_fire, parse_schedule
from core.rules.scheduler import DueRule, RuleTimeline, Scheduler, SkipReason
from core.rules.timeline import StoredTimeline
from core.store import rules as rule_rows
from core.store.models import RuleRow, RunRow
from core.tasks.views import TaskView
from tests.fakes.secrets import MemorySecretStore

ROOT = Path(__file__).resolve().parents[1]
RUNS = 4
T = TypeVar("T")


# ------------------------------------------------------------------------------------------- precision


@dataclass
class _Due:
    schedule: Schedule
    next_run_at: float | None


@dataclass
class MemoryTimeline:
    """Rules in memory with arbitrary epoch due times; records how late each fired (as the unit tests'
    MemoryTimeline, plus the lateness)."""

    rules: dict[str, _Due] = field(default_factory=dict)
    late: list[float] = field(default_factory=list)
    skipped: list[tuple[str, SkipReason]] = field(default_factory=list)
    all_decided: asyncio.Event = field(default_factory=asyncio.Event)

    def _decided(self) -> None:
        if len(self.late) + len(self.skipped) == len(self.rules):
            self.all_decided.set()

    async def earliest_due(self) -> float | None:
        times = [r.next_run_at for r in self.rules.values() if r.next_run_at is not None]
        return min(times) if times else None

    async def due(self, now: float) -> list[DueRule]:
        return [
            DueRule(rule_id, r.next_run_at, r.schedule)
            for rule_id, r in self.rules.items()
            if r.next_run_at is not None and r.next_run_at <= now
        ]

    async def record(
        self,
        fired: list[DueRule],
        skipped: list[tuple[DueRule, SkipReason]],
        next_runs: dict[str, float | None],
    ) -> None:
        self.late.extend(time.time() - rule.due_at for rule in fired)
        self.skipped.extend((rule.rule_id, reason) for rule, reason in skipped)
        # One firing per rule here: the next one (15 minutes on) is past the end of the measurement.
        for rule_id in next_runs:
            self.rules[rule_id].next_run_at = None
        self._decided()


EVERY_15 = Schedule(kind="every", tz="UTC", minutes=15)


async def measure_precision(rules: int, span_s: float) -> MemoryTimeline:
    """`rules` due at random times over `span_s` from 2 s from now; waits until all have fired."""
    timeline = MemoryTimeline()
    now = time.time()
    rng = random.Random(7)
    for n in range(rules):
        timeline.rules[f"ru_{n:03d}"] = _Due(EVERY_15, now + 2 + rng.uniform(0, span_s))
    scheduler = Scheduler(timeline, SystemClock())
    await scheduler.start()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(timeline.all_decided.wait(), span_s + 10)
    await scheduler.stop()
    return timeline


def _lateness(timeline: MemoryTimeline) -> str:
    ms = [v * 1000 for v in timeline.late]
    if not ms:
        return "no firings"
    skipped = f", {len(timeline.skipped)} skipped" if timeline.skipped else ""
    return (
        f"median {statistics.median(ms):7.2f} ms   p99 {percentile(ms, 99):7.2f} ms   "
        f"max {max(ms):7.2f} ms   (n={len(ms)}{skipped})"
    )


def _start_model(steps: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.streaming_model", "--steps", str(steps)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


async def precision(data_dir: Path, rules: int, span_s: float) -> None:
    line(
        f"scheduler precision, {rules} rules over {span_s:.0f} s, idle loop",
        _lateness(await measure_precision(rules, span_s)),
    )
    model, url = _start_model(steps=5000)
    host = Host(
        data_dir,
        secrets=MemorySecretStore(),
        model_override=ModelConfig(url, "fake-model", "sk-bench"),
        chat_retry=RetryPolicy(delays_s=(0.05,)),
    )
    try:
        await host.start()
        tasks: list[TaskView] = [
            await host.tasks.create(bot_id=None, words=f"bench work {i}", title=f"busy-{i}")
            for i in range(RUNS)
        ]
        timeline = await measure_precision(rules, span_s)
        steps = 0
        for task in tasks:
            detail = await host.tasks.detail(task.id)
            steps += sum(run.steps for run in detail.runs)
            if detail.task.stage not in {"ready", "failed", "stopped"}:
                await host.tasks.stop_task(task.id)
        line(f"scheduler precision, {rules} rules over {span_s:.0f} s, {RUNS} runs busy", _lateness(timeline))
        line(f"  ({steps} shell steps across the {RUNS} runs meanwhile)", "")
    finally:
        await host.stop()
        model.terminate()
        model.wait(10)


# ------------------------------------------------------------------------------------------- recompute


# Varied schedules, as people write them.
def _schedules() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for hour in (7, 8, 9, 12, 18, 21):
        for minute in (0, 30):
            out.append({"kind": "daily", "time": f"{hour:02d}:{minute:02d}"})
    for day in range(7):
        out.append({"kind": "weekly", "time": "09:00", "days": [day]})
    for minutes in (15, 30, 60, 120, 240, 1440):
        out.append({"kind": "every", "minutes": minutes})
    for cron in ("0 9 * * 1-5", "*/20 8-18 * * *", "0 */6 * * *", "30 7 1 * *"):
        out.append({"kind": "cron", "cron": cron})
    return out


SCHEDULES = _schedules()
TZ = "Asia/Shanghai"


@dataclass(frozen=True)
class Mix:
    name: str
    missed: float  # share of rules missed by more than their grace (skipped)
    reminders_due: int  # reminders due within their grace (they fire: a delivery, no model turn)


REALISTIC = Mix("realistic mix (1% missed, 20 reminders due)", 0.01, 20)
WORST = Mix("worst case (all missed)", 1.0, 0)
# The median recompute at commit 72f39f1 (before issue 18), same machine, 10,000 rules.
BEFORE_S = {REALISTIC.name: 1.36, WORST.name: 4.77}


def _plan(mix: Mix, count: int, now: float) -> list[tuple[str, dict[str, object], str, float]]:
    """(kind, schedule, id, next_run_at) per rule; the same every time for a mix."""
    rng = random.Random(11)
    out: list[tuple[str, dict[str, object], str, float]] = []
    for n in range(count):
        data = {**rng.choice(SCHEDULES), "tz": TZ}
        schedule = parse_schedule(data, default_tz=TZ)
        kind = "check"
        if n < mix.reminders_due:
            kind, data = "remind", {"kind": "every", "minutes": 60, "tz": TZ}
            due = now - 60.0  # a minute late: within the 30-minute grace
        elif rng.random() < mix.missed:
            due = now - 3 * 3600 - rng.uniform(0, 3 * 86400)  # longer ago than any grace (2 h at most)
        else:
            due = next_fire(schedule, now + 3600) or now + 86400  # ahead: nothing fires meanwhile
        out.append((kind, dict(data), f"ru_{n:012x}", due))
    return out


async def _insert(host: Host, plan: list[tuple[str, dict[str, object], str, float]]) -> None:
    bot = await host.bots.ensure_default()
    conversation = await host.chat.create_conversation(title="rules bench")
    now = time.time()

    def insert(s: Session) -> None:
        s.execute(delete(RunRow))
        s.execute(delete(RuleRow))
        for kind, data, rule_id, due in plan:
            rule_rows.insert_rule(
                s,
                id=rule_id,
                bot_id=bot.id,
                conversation_id=conversation.id,
                title=f"rule {rule_id}",
                instruction="提醒我喝水" if kind == "remind" else "看看 X 的价格",
                schedule=data,
                tz=TZ,
                now=now,
                kind="remind" if kind == "remind" else "check",
                next_run_at=due,
            )

    await host.db.write(insert)


async def _reset(host: Host, plan: list[tuple[str, dict[str, object], str, float]]) -> None:
    """Back to the planned next runs, without the runs the last recompute recorded."""

    def reset(s: Session) -> None:
        s.execute(delete(RunRow))
        s.execute(update(RuleRow), [{"id": rule_id, "next_run_at": due} for _, _, rule_id, due in plan])

    await host.db.write(reset)


async def _count_runs(host: Host) -> dict[str, int]:
    def read(s: Session) -> dict[str, int]:
        rows = s.execute(select(RunRow.outcome, func.count()).group_by(RunRow.outcome)).all()
        return {str(outcome): int(n) for outcome, n in rows}

    return await host.db.read(read)


class TimedTimeline:
    """A RuleTimeline that times each call of the one it wraps."""

    def __init__(self, inner: RuleTimeline) -> None:
        self.inner = inner
        self.spent: dict[str, list[float]] = defaultdict(list)

    async def _timed(self, name: str, call: Awaitable[T]) -> T:
        started = time.perf_counter()
        try:
            return await call
        finally:
            self.spent[name].append(time.perf_counter() - started)

    async def earliest_due(self) -> float | None:
        return await self._timed("earliest_due", self.inner.earliest_due())

    async def due(self, now: float) -> list[DueRule]:
        return await self._timed("due", self.inner.due(now))

    async def record(
        self,
        fired: list[DueRule],
        skipped: list[tuple[DueRule, SkipReason]],
        next_runs: dict[str, float | None],
    ) -> None:
        await self._timed(f"record ({len(fired)} fired)", self.inner.record(fired, skipped, next_runs))


async def _timed_recompute(call: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


@contextlib.contextmanager
def _main_thread_profile(profile: cProfile.Profile) -> Iterator[None]:
    profile.enable()
    try:
        yield
    finally:
        profile.disable()


def _top(profile: cProfile.Profile, limit: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(limit)
    return "\n".join("    " + row for row in out.getvalue().splitlines() if row.strip())


async def _breakdown(
    host: Host, mix: Mix, plan: list[tuple[str, dict[str, object], str, float]], profile_rows: int
) -> None:
    """Where the time goes: per RuleTimeline call, and the database worker thread under cProfile."""
    await _reset(host, plan)
    timed = TimedTimeline(StoredTimeline(host.db, host.bus, host.clock, host.rule_service, host.rule_runner))
    scheduler = Scheduler(timed, host.clock)
    worker, main = cProfile.Profile(), cProfile.Profile()
    await host.db.read(lambda _s: worker.enable())  # profiles the thread the store work runs on
    with _main_thread_profile(main):
        total = await _timed_recompute(lambda: scheduler.recompute("resume"))
    await host.db.read(lambda _s: worker.disable())
    await scheduler.stop()
    line(f"  breakdown ({mix.name}), total {total:.2f} s:", "")
    for name, spent in sorted(timed.spent.items(), key=lambda kv: -sum(kv[1])):
        line(
            f"    {name} x{len(spent)}",
            f"{sum(spent):7.2f} s total   {statistics.median(spent) * 1000:7.2f} ms each (median)",
        )
    if profile_rows:
        print(f"  database worker thread, top {profile_rows} by own time:")
        print(_top(worker, profile_rows))
        print(f"  loop thread, top {profile_rows} by own time:")
        print(_top(main, profile_rows))


async def recompute(data_dir: Path, count: int, repeats: int, worst_repeats: int, profile_rows: int) -> None:
    host = Host(
        data_dir,
        secrets=MemorySecretStore(),
        # No model request is made: missed rules are skipped, due reminders deliver their words.
        model_override=ModelConfig("http://127.0.0.1:9/v1", "fake-model", "sk-bench"),
    )
    await host.start()
    try:
        for mix in (REALISTIC, WORST):
            plan = _plan(mix, count, time.time())
            started = time.perf_counter()
            await _insert(host, plan)
            line(
                f"insert {count} rules (insert_rule, one transaction)",
                f"{time.perf_counter() - started:7.2f} s",
            )
            times: list[float] = []
            for _ in range(repeats if mix is REALISTIC else worst_repeats):
                await _reset(host, plan)
                times.append(await _timed_recompute(lambda: host.scheduler.recompute("resume")))
            outcomes = await _count_runs(host)
            figures = " ".join(f"{t:.2f}" for t in times)
            line(
                f"recompute('resume'), {count} rules, {mix.name}",
                f"median {statistics.median(times):7.2f} s   (runs: {figures} s; last recorded {outcomes})"
                + (f"   before {BEFORE_S[mix.name]:.2f} s" if count == 10_000 else ""),
            )

            await _breakdown(host, mix, plan, profile_rows)
    finally:
        await host.stop()


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_precision:
            await precision(Path(tmp) / "precision", args.rules, args.span)
        if not args.skip_recompute:
            await recompute(
                Path(tmp) / "recompute", args.count, args.repeats, args.worst_repeats, args.profile_rows
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_rules")
    parser.add_argument("--rules", type=int, default=30, help="rules in the precision run")
    parser.add_argument("--span", type=float, default=60.0, help="seconds over which they fall due")
    parser.add_argument("--count", type=int, default=10_000, help="rules in the recompute run")
    parser.add_argument("--repeats", type=int, default=3, help="recompute runs per mix (median)")
    parser.add_argument("--worst-repeats", type=int, default=1, help="recompute runs, worst case (slow)")
    parser.add_argument("--profile-rows", type=int, default=18, help="cProfile rows to print (0: none)")
    parser.add_argument("--skip-precision", action="store_true")
    parser.add_argument("--skip-recompute", action="store_true")
    args: Any = parser.parse_args(argv)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
