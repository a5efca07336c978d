"""Retention (docs/retention.md): what to do with idle tasks, their
folders and old run logs. Pure: facts and `now` in, decisions out; the sweeper reads and applies them.

- A task with no run in flight, idle 30 days, is archived (hidden, no follow-ups, open questions withdrawn).
- A task folder with files gets a deletion date at 27 idle days: 30 idle days, but never sooner than 3 days
  after the date is set (a machine that was off for a month gets 3 days, not an immediate delete). The
  folder and the task's session files go when the date comes. Nobody is asked; the date and 保留 are in the
  task detail. Any use of the task, or 保留, restarts the 30 days (and clears the date).
- Run logs older than 30 days are pruned, except live runs, each task's latest run and the current
  calendar month's rule runs (in the rule's zone: the monthly budget is counted from them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY_S = 86_400.0
ARCHIVE_AFTER_S = 30 * DAY_S  # idle this long: archived
DATE_AT_S = 27 * DAY_S  # idle this long: a folder with files gets its deletion date
DELETE_AFTER_S = 30 * DAY_S  # the date: this long after the task was last used ...
MIN_NOTICE_S = 3 * DAY_S  # ... but never sooner than this after the date was set
RUN_LOG_KEEP_S = 30 * DAY_S  # run logs younger than this are kept

LIVE_RUN_STATES = frozenset({"queued", "running", "settling"})


@dataclass(frozen=True, slots=True)
class TaskFacts:
    """What retention knows about one task. `has_files` is None when the folder was not looked at."""

    idle_since: float
    archived_at: float = 0.0
    cleanup_at: float = 0.0
    live_run: bool = False
    has_files: bool | None = None


@dataclass(frozen=True, slots=True)
class TaskDecision:
    archive: bool = False
    # The deletion date to store: None leaves it as it is, 0.0 clears it.
    cleanup_at: float | None = None
    delete_now: bool = False

    @property
    def changes(self) -> bool:
        """Whether the task's row changes now (a deletion changes it later, once the folder is gone)."""
        return self.archive or self.cleanup_at is not None


NOTHING = TaskDecision()


def idle_for(idle_since: float, now: float) -> float:
    return now - idle_since


def should_archive(facts: TaskFacts, now: float) -> bool:
    return not facts.live_run and not facts.archived_at and idle_for(facts.idle_since, now) >= ARCHIVE_AFTER_S


def wants_folder_check(facts: TaskFacts, now: float) -> bool:
    """Idle 27 days with no date yet: dated if its folder has files, so only then is the folder looked at."""
    return not facts.live_run and not facts.cleanup_at and idle_for(facts.idle_since, now) >= DATE_AT_S


def needs_date(facts: TaskFacts, now: float) -> bool:
    """A folder with files, idle 27 days, and no date yet. An empty or missing folder never gets one."""
    return facts.has_files is True and wants_folder_check(facts, now)


def deletion_date(idle_since: float, now: float) -> float:
    """30 idle days, and at least 3 days from `now` (when the date is set)."""
    return max(idle_since + DELETE_AFTER_S, now + MIN_NOTICE_S)


def date_is_stale(facts: TaskFacts, now: float) -> bool:
    """A date on a task used since it was set (use clears it; this catches a use that did not)."""
    return bool(facts.cleanup_at) and idle_for(facts.idle_since, now) < DATE_AT_S


def due_for_deletion(facts: TaskFacts, now: float) -> bool:
    """The date has come and no run is in flight (a run holds the folder; its end restarts the 30 days)."""
    return (
        not facts.live_run
        and bool(facts.cleanup_at)
        and now >= facts.cleanup_at
        and not date_is_stale(facts, now)
    )


def decide(facts: TaskFacts, now: float) -> TaskDecision:
    """Everything a pass does to one task. A task with a run in flight is left alone."""
    if facts.live_run:
        return NOTHING
    archive = should_archive(facts, now)
    if date_is_stale(facts, now):
        return TaskDecision(archive=archive, cleanup_at=0.0)
    if needs_date(facts, now):
        return TaskDecision(archive=archive, cleanup_at=deletion_date(facts.idle_since, now))
    return TaskDecision(archive=archive, delete_now=due_for_deletion(facts, now))


# -- run logs ----------------------------------------------------------------------------------------


class RunFacts(Protocol):
    """What pruning needs of a run; `tz` is the rule's zone ('' for a task's run or an unknown rule)."""

    @property
    def id(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def rule_id(self) -> str: ...
    @property
    def tz(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def queued_at(self) -> float: ...
    @property
    def started_at(self) -> float: ...
    @property
    def ended_at(self) -> float: ...


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A plain `RunFacts`."""

    id: str
    task_id: str = ""
    rule_id: str = ""
    tz: str = ""
    state: str = "ended"
    queued_at: float = 0.0
    started_at: float = 0.0
    ended_at: float = 0.0


def run_log_time(run: RunFacts) -> float:
    """When the run's log was last written: its end; for a run that never started, when it was queued."""
    if not run.started_at:
        return run.queued_at
    return run.ended_at or run.queued_at


def month_start(tz: str, now: float) -> float:
    """The start of the calendar month `now` falls in, in zone `tz` (UTC when the zone is unknown)."""
    zone = _zone(tz)
    local = datetime.fromtimestamp(now, zone)
    return datetime(local.year, local.month, 1, tzinfo=zone).timestamp()


def runs_to_prune(runs: Iterable[RunFacts], now: float) -> list[str]:
    """The ids of the runs whose logs go, in the order given.

    Each task's latest run (by queued time, then id) is kept, so for every task with a run among `runs`
    its latest run must be among them too."""
    listed = list(runs)
    latest: dict[str, RunFacts] = {}
    for run in listed:
        if run.task_id:
            best = latest.get(run.task_id)
            if best is None or (run.queued_at, run.id) > (best.queued_at, best.id):
                latest[run.task_id] = run
    keep_latest = {run.id for run in latest.values()}
    months: dict[str, float] = {}
    cutoff = now - RUN_LOG_KEEP_S
    pruned = []
    for run in listed:
        if run.state in LIVE_RUN_STATES or run.id in keep_latest or run_log_time(run) > cutoff:
            continue
        if run.rule_id:
            start = months.get(run.tz)
            if start is None:
                start = months[run.tz] = month_start(run.tz, now)
            if run.queued_at >= start:
                continue
        pruned.append(run.id)
    return pruned


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")
