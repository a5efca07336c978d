"""The `tasks` table: units of background work a person asked for, each with its own session and folder.

A task is open while `ended_at` is 0. It ends done, stopped by a person, or archived; a person's follow-up
can reopen a done task (`ended_at=0, end_reason=''`). Its runs, inputs and deliveries live in their own
tables and go with it when it is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict, Unpack, cast, get_args

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from core.store.amounts import decode_amounts, encode_amounts
from core.store.errors import NotFoundError
from core.store.models import DeliveryRow, RunInputRow, RunRow, TaskRow

# '' while the task is open (or reopened).
EndReason = Literal["", "done", "stopped", "archived"]

END_REASONS: frozenset[str] = frozenset(get_args(EndReason))


@dataclass(frozen=True, slots=True)
class TaskRecord:
    id: str
    bot_id: str
    conversation_id: str
    origin_message_id: int
    origin_ref: str
    title: str
    brief: str
    session_id: str
    folder: str
    model: str
    permission: str
    budget_usd: float
    spent_usd: float
    report: str
    ended_at: float
    end_reason: EndReason
    stopped_by: str
    cleanup_at: float
    created_at: float
    updated_at: float
    spent_other: dict[str, float] = field(default_factory=dict)  # currency -> amount, USD never here
    unpriced_calls: int = 0
    last_used_at: float = 0.0  # 0: never recorded; `idle_since` reads updated_at then
    archived_at: float = 0.0
    acceptance: str = ""  # the criteria as JSON (core.goals.acceptance); '' for a task without a goal
    goal: str = ""  # its rounds as JSON (core.goals.rounds); '' before the first check
    parent_id: str = ""  # the planned task a subtask belongs to; '' for any other task
    plan: str = ""  # a planned task's plan and phase as JSON (core.plans.state); '' without a plan

    @property
    def is_subtask(self) -> bool:
        return bool(self.parent_id)

    @property
    def idle_since(self) -> float:
        """When the task was last used: retention counts its idle days from here."""
        return self.last_used_at or self.updated_at


class TaskChanges(TypedDict, total=False):
    """The fields `update_task` may change; `updated_at` always becomes `now`."""

    title: str
    report: str
    spent_usd: float
    ended_at: float
    end_reason: EndReason
    stopped_by: str
    cleanup_at: float
    budget_usd: float
    model: str
    spent_other: Mapping[str, float]
    unpriced_calls: int
    last_used_at: float
    archived_at: float
    goal: str
    plan: str


UPDATABLE_FIELDS = frozenset(TaskChanges.__annotations__)


def insert_task(
    s: Session,
    *,
    id: str,
    bot_id: str,
    conversation_id: str,
    title: str,
    brief: str,
    session_id: str,
    folder: str,
    permission: str,
    budget_usd: float,
    now: float,
    model: str = "",
    origin_message_id: int = 0,
    origin_ref: str = "",
    acceptance: str = "",
    parent_id: str = "",
    plan: str = "",
) -> TaskRecord:
    _require_absolute(folder)
    row = TaskRow(
        id=id,
        bot_id=bot_id,
        conversation_id=conversation_id,
        origin_message_id=origin_message_id,
        origin_ref=origin_ref,
        title=title,
        brief=brief,
        session_id=session_id,
        folder=folder,
        model=model,
        permission=permission,
        budget_usd=budget_usd,
        spent_usd=0.0,
        report="",
        ended_at=0.0,
        end_reason="",
        stopped_by="",
        cleanup_at=0.0,
        created_at=now,
        updated_at=now,
        acceptance=acceptance,
        parent_id=parent_id,
        plan=plan,
    )
    s.add(row)
    s.flush()
    return _record(row)


def task_of_origin(s: Session, message_id: int) -> TaskRecord | None:
    """The task the person's message `message_id` asked for, if it started one (the latest)."""
    row = s.scalars(
        select(TaskRow)
        .where(TaskRow.origin_message_id == message_id)
        .order_by(TaskRow.created_at.desc())
        .limit(1)
    ).first()
    return _record(row) if row is not None else None


def get_task(s: Session, id: str) -> TaskRecord | None:
    row = s.get(TaskRow, id)
    return None if row is None else _record(row)


def list_tasks(s: Session, *, bot_id: str | None = None, include_ended: bool = True) -> list[TaskRecord]:
    """Newest first. A planned task's subtasks are not listed: they are parts of it (`subtasks_of`)."""
    stmt = select(TaskRow).where(TaskRow.parent_id == "")
    if bot_id is not None:
        stmt = stmt.where(TaskRow.bot_id == bot_id)
    if not include_ended:
        stmt = stmt.where(TaskRow.ended_at == 0)
    stmt = stmt.order_by(TaskRow.created_at.desc(), TaskRow.id.desc())
    return [_record(row) for row in s.scalars(stmt)]


def subtasks_of(s: Session, parent_id: str) -> list[TaskRecord]:
    """A planned task's subtasks, in the order they were made."""
    rows = s.scalars(
        select(TaskRow).where(TaskRow.parent_id == parent_id).order_by(TaskRow.created_at, TaskRow.id)
    )
    return [_record(row) for row in rows]


def tasks_of_conversation(s: Session, conversation_id: str) -> list[TaskRecord]:
    """Tasks whose origin is this conversation, oldest first (subtasks are parts of their task)."""
    rows = s.scalars(
        select(TaskRow)
        .where(TaskRow.conversation_id == conversation_id, TaskRow.parent_id == "")
        .order_by(TaskRow.created_at, TaskRow.id)
    )
    return [_record(row) for row in rows]


def count_open_tasks(s: Session, bot_id: str) -> int:
    stmt = (
        select(func.count())
        .select_from(TaskRow)
        .where(TaskRow.bot_id == bot_id, TaskRow.ended_at == 0, TaskRow.parent_id == "")
    )
    return s.execute(stmt).scalar_one()


def update_task(s: Session, id: str, *, now: float, **fields: Unpack[TaskChanges]) -> TaskRecord:
    """Change the named fields. A bad field or value raises ValueError before anything changes."""
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise ValueError(f"update_task: cannot change {sorted(unknown)}; allowed: {sorted(UPDATABLE_FIELDS)}")
    if "end_reason" in fields:
        _end_reason(fields["end_reason"])
    row = s.get(TaskRow, id)
    if row is None:
        raise NotFoundError("task", id)
    values: dict[str, object] = dict(fields)
    if "spent_other" in fields:
        values["spent_other"] = encode_amounts(fields["spent_other"])
    for name, value in values.items():
        setattr(row, name, value)
    row.updated_at = now
    s.flush()
    return _record(row)


def delete_task(s: Session, id: str) -> bool:
    """Delete the task with its runs, inputs and deliveries. Returns whether the task existed."""
    row = s.get(TaskRow, id)
    if row is None:
        return False
    for child in s.scalars(select(TaskRow.id).where(TaskRow.parent_id == id)).all():
        delete_task(s, child)
    s.execute(delete(DeliveryRow).where(DeliveryRow.task_id == id))
    s.execute(delete(RunInputRow).where(RunInputRow.task_id == id))
    s.execute(delete(RunRow).where(RunRow.task_id == id))
    s.delete(row)
    s.flush()
    return True


def _end_reason(value: str) -> EndReason:
    # The Literal types check callers statically; this catches values that arrive from JSON or the API.
    if value not in END_REASONS:
        raise ValueError(f"unknown task end reason {value!r}; expected one of {sorted(END_REASONS)}")
    return cast(EndReason, value)


def _require_absolute(folder: str) -> None:
    if not Path(folder).is_absolute():
        raise ValueError(f"a task's folder must be an absolute path, not {folder!r}")


def _record(row: TaskRow) -> TaskRecord:
    return TaskRecord(
        id=row.id,
        bot_id=row.bot_id,
        conversation_id=row.conversation_id,
        origin_message_id=row.origin_message_id,
        origin_ref=row.origin_ref,
        title=row.title,
        brief=row.brief,
        session_id=row.session_id,
        folder=row.folder,
        model=row.model,
        permission=row.permission,
        budget_usd=row.budget_usd,
        spent_usd=row.spent_usd,
        report=row.report,
        ended_at=row.ended_at,
        end_reason=_end_reason(row.end_reason),
        stopped_by=row.stopped_by,
        cleanup_at=row.cleanup_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        spent_other=decode_amounts(row.spent_other),
        unpriced_calls=row.unpriced_calls,
        last_used_at=row.last_used_at,
        archived_at=row.archived_at,
        acceptance=row.acceptance,
        goal=row.goal,
        parent_id=row.parent_id,
        plan=row.plan,
    )
