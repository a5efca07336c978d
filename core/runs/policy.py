"""How one kind of run differs from another, told to the run driver.

A task run and a rule run share their whole lifecycle (see core.runs.driver); what differs is what they
count against, what goes on after a turn, what a Report means, how they are nudged and what their end writes
and pushes. Each kind gives the driver one RunPolicy for all its runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

from sqlalchemy.orm import Session

from core.agent.model_config import RetryPolicy
from core.cost.meter import RunCost
from core.runs.live_run import LiveRun
from core.store.runs import RunOutcome, RunRecord

W = TypeVar("W")

SETTLE_LIMIT_S = 30 * 60.0


@dataclass(frozen=True)
class Ending:
    """How a run ends: its outcome and, when it did not succeed, why in the person's words."""

    outcome: RunOutcome
    error: str = ""


@dataclass(frozen=True)
class TimeCap:
    """The running time a run may have (core.runs.running_time says what counts) and what it says when cut."""

    seconds: float
    error: str


@dataclass(frozen=True)
class SettleLimit:
    """How long a run may settle (its turn ended, its jobs still run), and the note its session gets when its
    jobs are killed then; `{jobs}` in it lists them."""

    seconds: float
    note: str


@dataclass(frozen=True)
class RunLimits:
    """What a run of one kind is held to: the retries of its model calls, its running-time cap and how
    long it may settle."""

    retry: RetryPolicy
    time_cap: TimeCap
    settle: SettleLimit


class RunPolicy(Protocol[W]):
    @property
    def limits(self) -> RunLimits:
        """The run's retries, running-time cap and settle limit."""
        ...

    @property
    def saves_every_turn(self) -> bool:
        """Whether steps and spend are saved as each turn ends (shown while it works), not only at the end."""
        ...

    @property
    def session_outlives_run(self) -> bool:
        """Whether the session may serve a later run (a task's follow-up): then a busy one is left to finish
        when the run ends, and one a newer run took over is left open."""
        ...

    def changed(self, run: LiveRun[W]) -> None:
        """The run's state changed (started, settling): tell whoever shows it."""
        ...

    def step_added(self, run: LiveRun[W]) -> None:
        """A step was added to the run's activity."""
        ...

    def past_budget(self, run: LiveRun[W]) -> Ending | None:
        """None while the run's spend is within its budget; how it ends once it reached it."""
        ...

    def count_spend(self, s: Session, run: LiveRun[W], cost: RunCost, before: RunRecord, now: float) -> None:
        """Inside the transaction that saves the run's spend `cost` (`before` is its row as it was): add what
        it spent since to whatever else counts it."""
        ...

    async def take_inputs(self, run: LiveRun[W]) -> bool:
        """The session went quiet: hand it what arrived meanwhile. True when it goes on with something."""
        ...

    async def review(self, run: LiveRun[W]) -> bool:
        """The quiet run reported: check what it claims before it ends on it. True when it goes on instead
        (a goal task's next round)."""
        ...

    def verdict(self, run: LiveRun[W]) -> Ending | None:
        """How the quiet run ends by what it reported (or what happened to it); None when it has not said."""
        ...

    async def nudge(self, run: LiveRun[W]) -> None:
        """Record that the run was nudged, and ask its session once for the Report it did not give."""
        ...

    async def record_note(self, run: LiveRun[W], text: str) -> str | None:
        """Record a note the session is about to be told; the input id it goes in with (None: unrecorded)."""
        ...

    async def record_end(self, run_id: str, run: LiveRun[W] | None, ending: Ending, *, notify: bool) -> None:
        """Write the run's end, give its slot back, and push what the end owes (unless not `notify`). `run` is
        None when it ended before it ever worked (it could not start) or has ended already."""
        ...
