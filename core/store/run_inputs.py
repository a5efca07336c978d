"""The `run_inputs` table: what the host owes a task's (or rule's) session, until the session has taken it.

The agent drops its queued inbox on a restart, so every input is stored first: created, then delivered
(handed to a run), then taken (seen by the model). Recovery hands untaken inputs to a new run.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal, cast, get_args

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.store.chunks import chunked
from core.store.errors import NotFoundError
from core.store.models import RunInputRow

InputKind = Literal["brief", "answer", "followup", "note", "recovery", "nudge", "schedule", "job"]

KINDS: frozenset[str] = frozenset(get_args(InputKind))

_OLDEST_FIRST = (RunInputRow.created_at, RunInputRow.id)


@dataclass(frozen=True, slots=True)
class RunInputRecord:
    id: str
    task_id: str
    rule_id: str
    run_id: str
    kind: InputKind
    text: str
    from_person: bool
    delivered_at: float
    taken_at: float
    created_at: float


def insert_input(
    s: Session,
    *,
    id: str,
    kind: InputKind,
    text: str,
    now: float,
    task_id: str = "",
    rule_id: str = "",
    run_id: str = "",
    from_person: bool = False,
) -> RunInputRecord:
    row = RunInputRow(
        id=id,
        task_id=task_id,
        rule_id=rule_id,
        run_id=run_id,
        kind=_kind(kind),
        text=text,
        from_person=from_person,
        delivered_at=0.0,
        taken_at=0.0,
        created_at=now,
    )
    s.add(row)
    s.flush()
    return _record(row)


def get_input(s: Session, id: str) -> RunInputRecord | None:
    row = s.get(RunInputRow, id)
    return None if row is None else _record(row)


def inputs_of_task(s: Session, task_id: str) -> list[RunInputRecord]:
    """Oldest first."""
    if not task_id:
        return []  # rule inputs have task_id ''; that must not list them all
    stmt = select(RunInputRow).where(RunInputRow.task_id == task_id).order_by(*_OLDEST_FIRST)
    return [_record(row) for row in s.scalars(stmt)]


def inputs_of_tasks(s: Session, task_ids: Collection[str]) -> dict[str, list[RunInputRecord]]:
    """`inputs_of_task` for many tasks in a few queries."""
    found: dict[str, list[RunInputRecord]] = {task_id: [] for task_id in task_ids if task_id}
    for chunk in chunked(list(found)):
        stmt = select(RunInputRow).where(RunInputRow.task_id.in_(chunk)).order_by(*_OLDEST_FIRST)
        for row in s.scalars(stmt):
            found[row.task_id].append(_record(row))
    return found


def untaken_inputs(s: Session, task_id: str) -> list[RunInputRecord]:
    """The task's inputs its session has not taken yet (delivered or not), oldest first."""
    if not task_id:
        return []
    stmt = (
        select(RunInputRow)
        .where(RunInputRow.task_id == task_id, RunInputRow.taken_at == 0)
        .order_by(*_OLDEST_FIRST)
    )
    return [_record(row) for row in s.scalars(stmt)]


def mark_delivered(s: Session, id: str, *, run_id: str, now: float) -> RunInputRecord:
    """Record that the input was handed to `run_id`. Handing it over again (after a restart) overwrites."""
    row = _row(s, id)
    row.run_id = run_id
    row.delivered_at = now
    s.flush()
    return _record(row)


def mark_taken(s: Session, id: str, *, now: float) -> RunInputRecord:
    """Record that the session took the input. Idempotent: the first `taken_at` stays."""
    row = _row(s, id)
    if row.taken_at == 0:
        row.taken_at = now
        s.flush()
    return _record(row)


def _row(s: Session, id: str) -> RunInputRow:
    row = s.get(RunInputRow, id)
    if row is None:
        raise NotFoundError("run input", id)
    return row


def _kind(value: str) -> InputKind:
    # The Literal types check callers statically; this catches values that arrive from JSON or the API.
    if value not in KINDS:
        raise ValueError(f"unknown run input kind {value!r}; expected one of {sorted(KINDS)}")
    return cast(InputKind, value)


def _record(row: RunInputRow) -> RunInputRecord:
    return RunInputRecord(
        id=row.id,
        task_id=row.task_id,
        rule_id=row.rule_id,
        run_id=row.run_id,
        kind=_kind(row.kind),
        text=row.text,
        from_person=row.from_person,
        delivered_at=row.delivered_at,
        taken_at=row.taken_at,
        created_at=row.created_at,
    )
