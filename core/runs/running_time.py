"""The running time of a background run and its cap (docs/runs.md#the-time-cap), shared by task runs (4 h) and
rule runs (15 min).

Running time counts from the run's start, minus the time it spent waiting on a person (an approval): a run
that waits an hour for someone to say yes has not been working for that hour. It is read on the monotonic
clock, so a night the machine spent asleep, or a change of the wall clock, is not running time either. A run
that is settling (its turn ended, its jobs still run) is left to the separate settle limit, so the cap never
cuts it short.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from core.clock import Clock

# While the run waits on a person (or settles), the cap can't be reached: look again this often.
RECHECK_S = 60.0


@dataclass
class RunningTime:
    started_at: float
    waiting_since: float | None = None
    waited_s: float = 0.0

    @property
    def waiting(self) -> bool:
        return self.waiting_since is not None

    def running_s(self, now: float) -> float:
        waiting = now - self.waiting_since if self.waiting_since is not None else 0.0
        return now - self.started_at - self.waited_s - waiting

    def hold(self, now: float, holding: bool) -> None:
        """Stop (or restart) counting while the run waits on a person."""
        if holding and self.waiting_since is None:
            self.waiting_since = now
        elif not holding and self.waiting_since is not None:
            self.waited_s += now - self.waiting_since
            self.waiting_since = None


class _Session(Protocol):
    @property
    def session_id(self) -> str: ...

    @property
    def status(self) -> str: ...


class CappedRun(Protocol):
    @property
    def running(self) -> RunningTime: ...

    @property
    def session(self) -> _Session: ...


async def reach_cap(
    clock: Clock,
    cap_s: float,
    current: Callable[[], CappedRun | None],
    jobs_running: Callable[[str], bool],
) -> bool:
    """Sleep until the run has run for `cap_s` while neither waiting on a person nor settling: True then,
    False as soon as the run is gone (`current()` is None). Settling is its session idle with jobs still
    running (`jobs_running` is asked with the session id); a job started mid-turn doesn't pause the cap."""
    while (run := current()) is not None:
        left = cap_s - run.running.running_s(clock.monotonic())
        settling = run.session.status == "idle" and jobs_running(run.session.session_id)
        paused = run.running.waiting or settling
        if left <= 0 and not paused:
            return True
        await clock.sleep(RECHECK_S if paused else max(left, 1.0))
    return False
