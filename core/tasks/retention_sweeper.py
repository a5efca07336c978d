"""The retention pass (docs/retention.md): archives idle tasks, dates and deletes idle task folders with
their session files, and prunes old run logs. The policy is `core.tasks.retention`; everything it needs is in
the database (`tasks.last_used_at`, `archived_at`, `cleanup_at`), so a restart or a month with the machine
off changes nothing: the next pass picks up where the last one stopped.

Nobody is asked and nothing is pushed (docs/retention.md): no needs-you row, no notification. Each changed
task is announced with `TaskChanged`, so an open task detail shows its date.

The work is split so the host never waits long: deciding runs on the database thread, folder checks and
deletions in `asyncio.to_thread`, and changes are written in small transactions (each re-reads its tasks
first, so a task used meanwhile is left alone), so a chat message's write waits at most one of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import TaskChanged
from core.clock import Clock
from core.store import retention as retention_rows
from core.store.chunks import chunked
from core.store.database import Database
from core.store.retention import RetentionCandidate
from core.tasks.folders import remove_folder
from core.tasks.retention import (
    DATE_AT_S,
    RUN_LOG_KEEP_S,
    TaskFacts,
    decide,
    due_for_deletion,
    runs_to_prune,
    wants_folder_check,
)
from core.tasks.withdraw import withdraw_open_questions

log = logging.getLogger(__name__)

HOUR_S = 3600.0
# Per transaction, so other writes get their turn in between (each batch takes tens of milliseconds).
APPLY_BATCH = 50  # tasks archived or (un)dated; archiving withdraws questions one task at a time
DELETE_BATCH = 25  # folders re-checked, deleted and their dates cleared together
PRUNE_BATCH = 100  # runs deleted
RUN_PAGE = 500  # old runs read and decided per database call


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """What one pass did. `deleted_folders`: tasks whose folder and session files went (a folder outside
    its bot's workspace is never deleted: that is logged, and only the session files go). `deferred`:
    deletions that were due but wait for a later pass (the session was open or its files could not be
    removed, or the folder still had files)."""

    archived: int = 0
    dated: int = 0
    undated: int = 0
    deleted_folders: int = 0
    deferred: int = 0
    pruned_runs: int = 0
    pruned_inputs: int = 0
    changed_tasks: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a pass found, decided on the database thread. `to_check`: (task id, folder) of tasks dated if
    their folder has files; `to_apply`: tasks whose row changes whatever the folders hold; `due`: deletions
    whose date has come."""

    to_check: list[tuple[str, str]]
    to_apply: list[str]
    due: list[RetentionCandidate]


@dataclass(frozen=True, slots=True)
class _RunPage:
    doomed: dict[str, str]  # run id -> task id ('' for a rule's run)
    next: tuple[float, str] | None  # (queued_at, id) after which the next page starts; None: done


@dataclass(frozen=True, slots=True)
class _Applied:
    archived: list[str]
    dated: list[str]
    undated: list[str]


class RetentionSweeper:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        bus: EventBus,
        *,
        delete_session: Callable[[str], Awaitable[bool]],
        session_open: Callable[[str], bool],
        interval_s: float = HOUR_S,
        on_pass: Callable[[RetentionReport], None] | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._bus = bus
        self._delete_session = delete_session
        self._session_open = session_open
        self._interval_s = interval_s
        self._on_pass = on_pass
        self._pass_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None
        self.last_report: RetentionReport | None = None
        self.passes = 0

    # ---- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        """A pass now, then one every `interval_s` of the clock's time, and one soon after each `poke`."""
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.create_task(self._loop(), name="retention-sweeper")

    async def stop(self) -> None:
        task, self._loop_task = self._loop_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def poke(self) -> None:
        """Run a pass soon (the host calls it on resume and after a clock change)."""
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.run_pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                # A bad pass (a full disk, a locked file) is retried at the next one; the host goes on.
                log.exception("retention pass failed")
            await self._wait_for_next()

    async def _wait_for_next(self) -> None:
        sleep = asyncio.ensure_future(self._clock.sleep(self._interval_s))
        wake = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleep, wake}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (sleep, wake):
                waiter.cancel()
            await asyncio.gather(sleep, wake, return_exceptions=True)

    # ---- one pass -----------------------------------------------------------------------------------

    async def run_pass(self) -> RetentionReport:
        """One pass over every task and run log. Passes never overlap; a second caller waits its turn."""
        async with self._pass_lock:
            report = await self._pass()
        self.passes += 1
        self.last_report = report
        if self._on_pass is not None:
            self._on_pass(report)
        if report.changed_tasks or report.pruned_runs:
            log.info(
                "retention: %d archived, %d dated, %d undated, %d folders deleted, %d deferred, "
                "%d runs and %d inputs pruned",
                report.archived,
                report.dated,
                report.undated,
                report.deleted_folders,
                report.deferred,
                report.pruned_runs,
                report.pruned_inputs,
            )
        return report

    async def _pass(self) -> RetentionReport:
        now = self._clock.time()
        plan = await self._db.read(functools.partial(_plan, now=now))
        has_files = await asyncio.to_thread(_folders_with_files, plan.to_check) if plan.to_check else {}
        to_apply = sorted({*plan.to_apply, *(task_id for task_id, yes in has_files.items() if yes)})
        archived: list[str] = []
        dated: list[str] = []
        undated: list[str] = []
        for batch in chunked(to_apply, APPLY_BATCH):
            applied = await self._db.write(functools.partial(_apply, ids=batch, now=now, has_files=has_files))
            archived += applied.archived
            dated += applied.dated
            undated += applied.undated
            for task_id in sorted({*applied.archived, *applied.dated, *applied.undated}):
                self._bus.publish(TaskChanged(task_id))
        changed = {*archived, *dated, *undated}

        deleted: list[str] = []
        deferred = 0
        for due in chunked(plan.due, DELETE_BATCH):
            gone, waiting = await self._delete_folders(due, now)
            deleted += gone
            deferred += waiting
            for task_id in gone:
                self._bus.publish(TaskChanged(task_id))
        changed.update(deleted)

        pruned_runs, pruned_inputs, pruned_of = await self._prune_runs(now)
        for task_id in sorted(pruned_of - changed):
            self._bus.publish(TaskChanged(task_id))
        return RetentionReport(
            archived=len(archived),
            dated=len(dated),
            undated=len(undated),
            deleted_folders=len(deleted),
            deferred=deferred,
            pruned_runs=pruned_runs,
            pruned_inputs=pruned_inputs,
            changed_tasks=frozenset(changed | pruned_of),
        )

    async def _delete_folders(self, due: Sequence[RetentionCandidate], now: float) -> tuple[list[str], int]:
        """Delete the folders and session files of tasks whose date has come. Returns the tasks done with
        and how many wait for a later pass (session open, files left, session files not removed)."""
        closed = [c.id for c in due if not self._session_open(c.session_id)]
        deferred = len(due) - len(closed)  # in use in the runtime right now: a later pass tries again
        # Re-read just before deleting: 保留 or a new run since the pass began keeps everything.
        fresh = await self._db.read(lambda s: retention_rows.candidates(s, idle_before=0.0, ids=closed))
        still_due = [c for c in fresh if due_for_deletion(_facts(c), now)]
        if not still_due:
            return [], deferred
        emptied = await asyncio.to_thread(_remove_folders, still_due)
        done: dict[str, float] = {}
        for task in still_due:
            if task.id in emptied and await self._session_deleted(task.session_id):
                done[task.id] = task.cleanup_at
            else:
                deferred += 1
        cleared = await self._db.write(functools.partial(_clear_dates, dates=done))
        return cleared, deferred

    async def _session_deleted(self, session_id: str) -> bool:
        try:
            return await self._delete_session(session_id)
        except Exception:
            # One session that cannot go must not stop the pass; its date stays and a later pass retries.
            log.warning(
                "retention: could not delete session %s; trying again later", session_id, exc_info=True
            )
            return False

    async def _prune_runs(self, now: float) -> tuple[int, int, set[str]]:
        """Page through the old runs (oldest first), deleting each page's doomed ones in small batches."""
        pruned_runs = pruned_inputs = 0
        pruned_of: set[str] = set()
        after: tuple[float, str] | None = None
        while True:
            page = await self._db.read(functools.partial(_doomed_runs, now=now, after=after))
            for batch in chunked(list(page.doomed.items()), PRUNE_BATCH):
                runs, inputs = await self._db.write(
                    functools.partial(retention_rows.delete_runs, runs=dict(batch))
                )
                pruned_runs += runs
                pruned_inputs += inputs
            pruned_of.update(task_id for task_id in page.doomed.values() if task_id)
            if page.next is None:
                return pruned_runs, pruned_inputs, pruned_of
            after = page.next


def _facts(candidate: RetentionCandidate, has_files: bool | None = None) -> TaskFacts:
    return TaskFacts(
        idle_since=candidate.idle_since,
        archived_at=candidate.archived_at,
        cleanup_at=candidate.cleanup_at,
        live_run=candidate.live_run,
        has_files=has_files,
    )


# -- on the database thread -----------------------------------------------------------------------------


def _plan(s: Session, *, now: float) -> _Plan:
    to_check: list[tuple[str, str]] = []
    to_apply: list[str] = []
    due: list[RetentionCandidate] = []
    for candidate in retention_rows.candidates(s, idle_before=now - DATE_AT_S):
        facts = _facts(candidate)
        decision = decide(facts, now)
        check = wants_folder_check(facts, now)
        if check:
            to_check.append((candidate.id, candidate.folder))
        if decision.changes:
            to_apply.append(candidate.id)
        if decision.delete_now:
            due.append(candidate)
    return _Plan(to_check, to_apply, due)


def _apply(s: Session, *, ids: Sequence[str], now: float, has_files: Mapping[str, bool]) -> _Applied:
    """Decide again on fresh rows (a task used since the plan is left alone) and apply, in one transaction:
    nobody sees a task archived with its question still open."""
    archive: list[str] = []
    dates: dict[str, float] = {}
    for candidate in retention_rows.candidates(s, idle_before=now - DATE_AT_S, ids=ids):
        decision = decide(_facts(candidate, has_files.get(candidate.id)), now)
        if decision.archive:
            archive.append(candidate.id)
        if decision.cleanup_at is not None:
            dates[candidate.id] = decision.cleanup_at
    retention_rows.archive_tasks(s, archive, now=now)
    for task_id in sorted(retention_rows.tasks_with_open_questions(s, archive)):
        withdraw_open_questions(s, task_id, now)
    retention_rows.set_cleanup_dates(s, dates)
    return _Applied(
        archived=archive,
        dated=[task_id for task_id, at in dates.items() if at],
        undated=[task_id for task_id, at in dates.items() if not at],
    )


def _clear_dates(s: Session, *, dates: Mapping[str, float]) -> list[str]:
    """Clear the dates deletions were carried out for (a date changed meanwhile stays)."""
    return [
        task_id for task_id, at in dates.items() if retention_rows.clear_cleanup_date(s, task_id, expected=at)
    ]


def _doomed_runs(s: Session, *, now: float, after: tuple[float, str] | None) -> _RunPage:
    """One page of old runs, decided: the ones whose logs go (with their tasks), and where the next starts."""
    page = retention_rows.old_runs(s, queued_before=now - RUN_LOG_KEEP_S, after=after, limit=RUN_PAGE)
    listed = {run.id for run in page}
    task_ids = sorted({run.task_id for run in page if run.task_id})
    latest = [run for run in retention_rows.latest_task_runs(s, task_ids) if run.id not in listed]
    task_of = {run.id: run.task_id for run in page}
    doomed = {run_id: task_of[run_id] for run_id in runs_to_prune([*page, *latest], now) if run_id in task_of}
    last = page[-1] if len(page) == RUN_PAGE else None
    return _RunPage(doomed, None if last is None else (last.queued_at, last.id))


# -- on a worker thread ---------------------------------------------------------------------------------


def _folders_with_files(folders: Iterable[tuple[str, str]]) -> dict[str, bool]:
    return {task_id: _has_files(Path(folder)) for task_id, folder in folders}


def _has_files(folder: Path) -> bool:
    """Whether anything but directories is under `folder` (False when it is missing). Stops at the first."""
    return any(files for _root, _dirs, files in os.walk(folder))


def _remove_folders(tasks: Iterable[RetentionCandidate]) -> set[str]:
    """Delete each task's folder; returns the tasks whose folder is now gone or empty."""
    emptied: set[str] = set()
    for task in tasks:
        folder = Path(task.folder)
        try:
            remove_folder(folder, Path(task.workspace))
        except OSError:
            log.warning("retention: could not delete %s (task %s); trying again later", folder, task.id)
            continue
        except ValueError:
            # Not inside its bot's workspace (the workspace moved since): never delete outside it.
            log.warning(
                "retention: not deleting %s (task %s): outside its bot's tasks folder", folder, task.id
            )
            emptied.add(task.id)  # the session files still go and the date is cleared: nothing to retry
            continue
        if _has_files(folder):
            log.warning("retention: %s (task %s) still has files; trying again later", folder, task.id)
        else:
            emptied.add(task.id)
    return emptied
