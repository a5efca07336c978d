"""The queries retention needs (docs/retention.md): which tasks a pass looks at, archiving them, their
folders' deletion dates, and pruning old run logs. Set-based, a few statements per batch of tasks or runs,
each through an index (the tasks scan is the one exception: 10,000 rows in a few milliseconds); the policy
(what is old enough) is the caller's.

Nothing here changes `updated_at`: a deletion date or an archive is not a use of the task, and the task
lists order by that time.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, case, delete, exists, func, literal, or_, select, update
from sqlalchemy.orm import Session, aliased

from core.store.chunks import chunked
from core.store.models import ApprovalRow, BotRow, RuleRow, RunInputRow, RunRow, TaskRow
from core.store.runs import LIVE_STATES

_NO_SYNC = {"synchronize_session": False}


@dataclass(frozen=True, slots=True)
class RetentionCandidate:
    """A task a retention pass looks at, with its folder's bot workspace (deletion stays inside it)."""

    id: str
    bot_id: str
    session_id: str
    folder: str
    workspace: str
    idle_since: float
    archived_at: float
    cleanup_at: float
    live_run: bool


@dataclass(frozen=True, slots=True)
class RunAge:
    """The light columns of a run that pruning decides on; `tz` is its rule's zone ('' for a task run)."""

    id: str
    task_id: str
    rule_id: str
    tz: str
    state: str
    queued_at: float
    started_at: float
    ended_at: float


@dataclass(frozen=True, slots=True)
class RetentionCounts:
    tasks: int
    archived: int
    dated: int
    runs: int
    run_inputs: int
    open_questions: int


def idle_since() -> ColumnElement[float]:
    """`TaskRecord.idle_since` as SQL: when the task was last used, or last changed if never recorded."""
    return case((TaskRow.last_used_at > 0, TaskRow.last_used_at), else_=TaskRow.updated_at)


def candidates(
    s: Session, *, idle_before: float, ids: Collection[str] | None = None
) -> list[RetentionCandidate]:
    """Tasks with a deletion date, and tasks idle since `idle_before` or longer that are not archived (or
    were used again after they were archived). An archived task whose folder is gone is never read again.

    `ids` narrows the answer to these tasks (a re-check just before a deletion)."""
    idle = idle_since()
    stmt = (
        select(
            TaskRow.id,
            TaskRow.bot_id,
            TaskRow.session_id,
            TaskRow.folder,
            BotRow.workspace,
            idle,
            TaskRow.archived_at,
            TaskRow.cleanup_at,
        )
        .join(BotRow, BotRow.id == TaskRow.bot_id)
        .where(
            or_(
                TaskRow.cleanup_at > 0,
                and_(idle <= idle_before, or_(TaskRow.archived_at == 0, idle >= TaskRow.archived_at)),
            )
        )
        .order_by(TaskRow.id)
    )
    if ids is not None:
        wanted = list(ids)
        if not wanted:
            return []
        rows = [row for chunk in chunked(wanted) for row in s.execute(stmt.where(TaskRow.id.in_(chunk)))]
    else:
        rows = list(s.execute(stmt))
    live = tasks_with_live_runs(s)
    return [
        RetentionCandidate(
            id=row[0],
            bot_id=row[1],
            session_id=row[2],
            folder=row[3],
            workspace=row[4],
            idle_since=float(row[5]),
            archived_at=row[6],
            cleanup_at=row[7],
            live_run=row[0] in live,
        )
        for row in rows
    ]


def tasks_with_live_runs(s: Session) -> set[str]:
    """Tasks with a queued, running or settling run (few at any time; read through the state index)."""
    stmt = (
        select(RunRow.task_id).where(RunRow.state.in_(sorted(LIVE_STATES)), RunRow.task_id != "").distinct()
    )
    return set(s.scalars(stmt))


def archive_tasks(s: Session, task_ids: Sequence[str], *, now: float) -> int:
    """Archive these tasks (those not archived yet): hidden, and ended so nothing follows up. A task that
    had ended keeps its end time. Returns how many changed. Open questions are the caller's (withdraw)."""
    changed = 0
    for chunk in chunked(task_ids):
        result = s.execute(
            update(TaskRow)
            .where(TaskRow.id.in_(chunk), TaskRow.archived_at == 0)
            .values(
                archived_at=now,
                end_reason="archived",
                ended_at=case((TaskRow.ended_at == 0, now), else_=TaskRow.ended_at),
            )
            .execution_options(**_NO_SYNC)
        )
        changed += _rowcount(result)
    return changed


def tasks_with_open_questions(s: Session, task_ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in chunked(task_ids):
        stmt = (
            select(ApprovalRow.task_id)
            .where(
                ApprovalRow.task_id.in_(chunk), ApprovalRow.status == "open", ApprovalRow.kind == "question"
            )
            .distinct()
        )
        found.update(s.scalars(stmt))
    return found


def set_cleanup_dates(s: Session, dates: Mapping[str, float]) -> None:
    """Set (or, with 0, clear) the deletion date of each task, in one batched statement."""
    if dates:
        s.execute(update(TaskRow), [{"id": task_id, "cleanup_at": at} for task_id, at in dates.items()])


def clear_cleanup_date(s: Session, task_id: str, *, expected: float) -> bool:
    """Clear the date a deletion was carried out for; a date that changed meanwhile (保留, a use) stays."""
    result = s.execute(
        update(TaskRow)
        .where(TaskRow.id == task_id, TaskRow.cleanup_at == expected)
        .values(cleanup_at=0.0)
        .execution_options(**_NO_SYNC)
    )
    return _rowcount(result) > 0


# -- run logs ----------------------------------------------------------------------------------------


def old_runs(
    s: Session, *, queued_before: float, after: tuple[float, str] | None = None, limit: int | None = None
) -> list[RunAge]:
    """Ended runs queued before `queued_before` (a run's log can be no older than its queueing), except
    each task's latest, oldest first; a page of `limit` after the run (queued_at, id) `after`. Pair them
    with `latest_task_runs` so a policy sees what it keeps.

    A task's latest run is never pruned, so it is not read again on every pass: a pass with nothing to
    prune reads only rule runs of the current month that are over 30 days old (a day's worth at most)."""
    later = aliased(RunRow)
    newer_run_of_task = (
        exists()
        .where(
            later.task_id == RunRow.task_id,
            or_(
                later.queued_at > RunRow.queued_at,
                and_(later.queued_at == RunRow.queued_at, later.id > RunRow.id),
            ),
        )
        .correlate(RunRow)
    )
    stmt = (
        select(
            RunRow.id,
            RunRow.task_id,
            RunRow.rule_id,
            func.coalesce(RuleRow.tz, ""),
            RunRow.state,
            RunRow.queued_at,
            RunRow.started_at,
            RunRow.ended_at,
        )
        .outerjoin(RuleRow, and_(RunRow.rule_id != "", RuleRow.id == RunRow.rule_id))
        .where(
            RunRow.state == "ended",
            RunRow.queued_at < queued_before,
            or_(RunRow.task_id == "", newer_run_of_task),
        )
        .order_by(RunRow.queued_at, RunRow.id)
    )
    if after is not None:
        at, run_id = after
        stmt = stmt.where(or_(RunRow.queued_at > at, and_(RunRow.queued_at == at, RunRow.id > run_id)))
    if limit is not None:
        stmt = stmt.limit(limit)
    return [RunAge(*row) for row in s.execute(stmt)]


def latest_task_runs(s: Session, task_ids: Sequence[str]) -> list[RunAge]:
    """The latest run (by queued time, then id) of each of these tasks."""
    found: list[RunAge] = []
    for chunk in chunked(task_ids):
        rank = func.row_number().over(
            partition_by=RunRow.task_id, order_by=(RunRow.queued_at.desc(), RunRow.id.desc())
        )
        ranked = (
            select(
                RunRow.id,
                RunRow.task_id,
                RunRow.rule_id,
                literal("").label("tz"),
                RunRow.state,
                RunRow.queued_at,
                RunRow.started_at,
                RunRow.ended_at,
                rank.label("n"),
            )
            .where(RunRow.task_id.in_(chunk))
            .subquery()
        )
        stmt = select(*(c for c in ranked.c if c.name != "n")).where(ranked.c.n == 1)
        found.extend(RunAge(*row) for row in s.execute(stmt))
    return found


def delete_runs(s: Session, runs: Mapping[str, str]) -> tuple[int, int]:
    """Delete these ended runs (run id -> its task id, '' for a rule's) with the inputs they had taken;
    untaken ones are still owed to the task. Returns (runs, inputs) deleted."""
    deleted_runs = deleted_inputs = 0
    for chunk in chunked(list(runs)):
        # By id alone: with `state = 'ended'` added, SQLite would walk the state index instead (every ended
        # run, ~70 ms per batch at 30,000 runs). The ids are ended runs, and an ended run never comes back.
        result = s.execute(delete(RunRow).where(RunRow.id.in_(chunk)).execution_options(**_NO_SYNC))
        deleted_runs += _rowcount(result)
        # Through the (task_id, taken_at) index: a rule's inputs have task_id ''.
        task_ids = sorted({runs[run_id] for run_id in chunk})
        result = s.execute(
            delete(RunInputRow)
            .where(RunInputRow.task_id.in_(task_ids), RunInputRow.taken_at > 0, RunInputRow.run_id.in_(chunk))
            .execution_options(**_NO_SYNC)
        )
        deleted_inputs += _rowcount(result)
    return deleted_runs, deleted_inputs


# -- figures -----------------------------------------------------------------------------------------


def counts(s: Session) -> RetentionCounts:
    def count(table: type[object], *where: ColumnElement[bool]) -> int:
        return int(s.execute(select(func.count()).select_from(table).where(*where)).scalar_one())

    return RetentionCounts(
        tasks=count(TaskRow),
        archived=count(TaskRow, TaskRow.archived_at > 0),
        dated=count(TaskRow, TaskRow.cleanup_at > 0),
        runs=count(RunRow),
        run_inputs=count(RunInputRow),
        open_questions=count(ApprovalRow, ApprovalRow.status == "open", ApprovalRow.kind == "question"),
    )


def _rowcount(result: object) -> int:
    return int(getattr(result, "rowcount", 0) or 0)
