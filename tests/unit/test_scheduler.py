"""The rule scheduler on a fake clock: one timer, runs on time, never a backlog, missed-run grace, no
overlap, paused bots skipped, and a resume (wall-clock jump) recomputed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

import pytest

from core.clock import FakeClock
from core.rules.schedule import Schedule, next_fire
from core.rules.scheduler import DueRule, Scheduler, SkipReason, decide

HOUR = 3600.0


@dataclass
class Rule:
    schedule: Schedule
    next_run_at: float | None
    running: bool = False
    paused: bool = False


@dataclass
class MemoryTimeline:
    """Rules in memory; what the scheduler did, in order."""

    rules: dict[str, Rule] = field(default_factory=dict)
    fired: list[tuple[str, float]] = field(default_factory=list)
    skipped: list[tuple[str, float, SkipReason]] = field(default_factory=list)

    async def earliest_due(self) -> float | None:
        times = [r.next_run_at for r in self.rules.values() if r.next_run_at is not None]
        return min(times) if times else None

    async def due(self, now: float) -> list[DueRule]:
        return [
            DueRule(rule_id, r.next_run_at, r.schedule, running=r.running, paused=r.paused)
            for rule_id, r in self.rules.items()
            if r.next_run_at is not None and r.next_run_at <= now
        ]

    async def record(
        self,
        fired: list[DueRule],
        skipped: list[tuple[DueRule, SkipReason]],
        next_runs: dict[str, float | None],
    ) -> None:
        self.fired.extend((rule.rule_id, rule.due_at) for rule in fired)
        self.skipped.extend((rule.rule_id, rule.due_at, reason) for rule, reason in skipped)
        for rule_id, next_run_at in next_runs.items():
            self.rules[rule_id].next_run_at = next_run_at


EVERY_30 = Schedule(kind="every", tz="UTC", minutes=30)
DAILY_8 = Schedule(kind="daily", tz="UTC", time="08:00")
# 2026-11-30 07:00 UTC (a Monday).
START = 1_796_022_000.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=START)


@pytest.fixture
async def timeline() -> AsyncIterator[MemoryTimeline]:
    yield MemoryTimeline()


async def settle(clock: FakeClock) -> None:
    """Let the scheduler's timer task run until it sleeps (again), or until it has nothing left to wait
    for; the fake clock only wakes sleepers that are already asleep when it advances."""
    for _ in range(50):
        if clock.sleeper_count:
            return
        await asyncio.sleep(0)


async def test_a_rule_fires_on_time_and_then_at_its_next_time(
    clock: FakeClock, timeline: MemoryTimeline
) -> None:
    timeline.rules["daily"] = Rule(DAILY_8, next_fire(DAILY_8, clock.time()))
    scheduler = Scheduler(timeline, clock)
    await scheduler.start()
    await settle(clock)
    assert timeline.fired == []

    clock.advance(HOUR)  # 08:00
    await settle(clock)
    assert timeline.fired == [("daily", START + HOUR)]
    assert timeline.rules["daily"].next_run_at == START + HOUR + 24 * HOUR
    await scheduler.stop()


async def test_a_missed_run_within_its_grace_runs_once_and_an_older_one_is_skipped(
    clock: FakeClock, timeline: MemoryTimeline
) -> None:
    # every 30 min: grace is 15 min. Due 10 minutes ago: runs. Due 20 minutes ago: skipped.
    timeline.rules["recent"] = Rule(EVERY_30, START - 600)
    timeline.rules["old"] = Rule(EVERY_30, START - 1200)
    # daily: grace 2 h. Due 3 days ago (the app was off): one skip, not three.
    timeline.rules["daily"] = Rule(DAILY_8, START - 3 * 24 * HOUR - HOUR)
    scheduler = Scheduler(timeline, clock)
    await scheduler.start()

    assert timeline.fired == [("recent", START - 600)]
    assert timeline.skipped == [
        ("old", START - 1200, "missed"),
        ("daily", START - 3 * 24 * HOUR - HOUR, "missed"),
    ]
    # The next times come from now: no backlog.
    assert timeline.rules["old"].next_run_at == next_fire(EVERY_30, START)
    assert timeline.rules["daily"].next_run_at == START + HOUR
    await scheduler.stop()


async def test_a_rule_never_overlaps_itself_and_a_paused_bot_is_not_caught_up(
    clock: FakeClock, timeline: MemoryTimeline
) -> None:
    timeline.rules["busy"] = Rule(EVERY_30, START, running=True)
    timeline.rules["paused"] = Rule(EVERY_30, START, paused=True)
    scheduler = Scheduler(timeline, clock)
    await scheduler.start()
    assert timeline.fired == []
    assert sorted(timeline.skipped) == [("busy", START, "overlap"), ("paused", START, "paused")]

    timeline.rules["paused"].paused = False  # unpaused: the skipped firing is not made up for
    clock.advance(60)
    await scheduler.recompute("resume")
    assert timeline.fired == []
    await scheduler.stop()


async def test_a_wall_clock_jump_is_recomputed_once_per_rule(
    clock: FakeClock, timeline: MemoryTimeline
) -> None:
    timeline.rules["daily"] = Rule(DAILY_8, next_fire(DAILY_8, clock.time()))
    timeline.rules["every"] = Rule(EVERY_30, next_fire(EVERY_30, clock.time()))
    scheduler = Scheduler(timeline, clock)
    await scheduler.start()

    clock.jump_wall(2 * 24 * HOUR)  # a two-day suspend: the monotonic timer hasn't fired
    await scheduler.recompute("resume")
    assert timeline.fired == []  # both missed by far more than their grace
    assert [(rule, reason) for rule, _due, reason in timeline.skipped] == [
        ("daily", "missed"),
        ("every", "missed"),
    ]
    assert timeline.rules["daily"].next_run_at == next_fire(DAILY_8, clock.time())
    await scheduler.stop()


async def test_a_once_rule_fires_and_is_done(clock: FakeClock, timeline: MemoryTimeline) -> None:
    once = Schedule(kind="once", tz="UTC", at="2026-11-30T07:30")
    timeline.rules["once"] = Rule(once, next_fire(once, clock.time()))
    scheduler = Scheduler(timeline, clock)
    await scheduler.start()
    await settle(clock)  # the timer is asleep
    clock.advance(HOUR / 2)
    await settle(clock)
    assert timeline.fired == [("once", START + HOUR / 2)]
    assert timeline.rules["once"].next_run_at is None
    await scheduler.stop()


def test_decide_is_pure_and_orders_its_reasons() -> None:
    due = DueRule("r", START, EVERY_30)
    assert decide(due, START + 60) == "fire"
    assert decide(replace(due, running=True), START + 60) == "overlap"
    assert decide(replace(due, running=True), START + 3600) == "missed"
    assert decide(replace(due, paused=True, running=True), START + 60) == "paused"
