"""The rule scheduler (docs/runs.md#the-scheduler): one timer for the earliest due rule.

When it fires (or at start, after a resume or a clock change: `recompute`), every due rule is decided once:
- run it (a Run with cause `schedule`, which then waits for a slot; a reminder's words go out at once);
- or record it `skipped`: missed by more than its grace (the app was off or asleep; we never catch up a
  backlog), its bot's background work is paused (not caught up later either), or its previous run is still
  going (a rule never overlaps itself).
Either way its next time is computed from now, so a long sleep yields one decision per rule, not a backlog.
All of a wake's decisions are recorded in one transaction with the next times (`RuleTimeline.record`).

The scheduler owns only time; what a firing does, and where rules live, is the `RuleTimeline`'s business.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Literal, Protocol

from core.clock import Clock
from core.rules.schedule import Schedule, grace_s, next_fire

log = logging.getLogger(__name__)

SkipReason = Literal["missed", "paused", "overlap"]
Decision = Literal["fire"] | SkipReason

# The timer never sleeps longer than this: a wall-clock jump the watchers miss is still noticed soon.
MAX_SLEEP_S = 15 * 60


@dataclass(frozen=True, slots=True)
class DueRule:
    rule_id: str
    due_at: float  # the time it was due (its stored next run)
    schedule: Schedule
    running: bool = False  # a run of this rule is queued, running or settling
    paused: bool = False  # its bot's background work is paused


class RuleTimeline(Protocol):
    async def earliest_due(self) -> float | None:
        """The earliest stored next run of any rule that can fire (not off, not paused for failures)."""
        ...

    async def due(self, now: float) -> list[DueRule]:
        """Those rules whose next run is at or before `now`."""
        ...

    async def record(
        self,
        fired: list[DueRule],
        skipped: list[tuple[DueRule, SkipReason]],
        next_runs: dict[str, float | None],
    ) -> None:
        """In one transaction, however many rules a long sleep made due: a Run with cause `schedule` for
        each fired rule, the runs that were `skipped` (with why), and each decided rule's next run (None: it
        will not run again, e.g. a `once` that has fired). A crash keeps all of it or none: a rule fires
        once or is due again. Then what the fired runs do next (a reminder's words go out, a check waits
        for a slot)."""
        ...


def decide(rule: DueRule, now: float) -> Decision:
    """What to do with one due rule at `now` (pure)."""
    if rule.paused:
        return "paused"
    if now - rule.due_at > grace_s(rule.schedule):
        return "missed"
    if rule.running:
        return "overlap"
    return "fire"


class Scheduler:
    def __init__(self, timeline: RuleTimeline, clock: Clock) -> None:
        self._timeline = timeline
        self._clock = clock
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    async def start(self) -> None:
        await self.recompute("start")

    async def recompute(self, reason: str = "") -> None:
        """Decide every due rule now, then set the one timer for the earliest next run. Called at start,
        after a resume or clock change (Host.on_resync), and whenever a rule's schedule changes."""
        if self._closed:
            return
        async with self._lock:
            now = self._clock.time()
            fired: list[DueRule] = []
            skipped: list[tuple[DueRule, SkipReason]] = []
            next_runs: dict[str, float | None] = {}
            # Rules missed in a long sleep all count from `now`, and most share a few schedules: compute
            # each (schedule, start) once rather than per rule.
            following: dict[tuple[Schedule, float], float | None] = {}
            for rule in await self._timeline.due(now):
                decision = decide(rule, now)
                if decision == "fire":
                    fired.append(rule)
                else:
                    skipped.append((rule, decision))
                # From now, never from the missed time: one decision per rule after a long sleep.
                start = max(now, rule.due_at)
                if (rule.schedule, start) not in following:
                    following[rule.schedule, start] = next_fire(rule.schedule, start)
                next_runs[rule.rule_id] = following[rule.schedule, start]
            if next_runs:
                # Firings and skips in one write with the next runs: a firing per transaction cost 40 ms
                # of commits and re-reads each, and a crash between a firing and its next run fired it twice.
                await self._timeline.record(fired, skipped, next_runs)
            await self._arm(now)
        if reason:
            log.debug("schedules recomputed (%s)", reason)

    async def stop(self) -> None:
        self._closed = True
        timer, self._timer = self._timer, None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer

    async def _arm(self, now: float) -> None:
        if self._timer is not None and self._timer is not asyncio.current_task():
            self._timer.cancel()
        self._timer = None
        earliest = await self._timeline.earliest_due()
        if earliest is None or self._closed:
            return
        delay = min(max(0.0, earliest - now), MAX_SLEEP_S)
        self._timer = asyncio.get_running_loop().create_task(self._wake(delay))

    async def _wake(self, delay: float) -> None:
        await self._clock.sleep(delay)
        self._timer = None
        await self.recompute()
