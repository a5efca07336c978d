"""Questions and approvals that wait for a person. ApprovalCenter-style: one writer, the TaskService."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.store.errors import NotFoundError
from core.store.models import ApprovalRow

ApprovalKind = Literal["question", "approval"]
ApprovalStatus = Literal["open", "answered", "withdrawn", "expired"]
DecidedBy = Literal["", "person", "default", "ttl"]
_KINDS = frozenset({"question", "approval"})
_STATUSES = frozenset({"open", "answered", "withdrawn", "expired"})


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    id: str
    kind: ApprovalKind
    bot_id: str
    conversation_id: str
    task_id: str
    run_id: str
    text: str
    options: tuple[str, ...]
    default: str | None
    code: str
    status: ApprovalStatus
    answer: str
    decided_by: str
    created_at: float
    decided_at: float


def insert_approval(
    s: Session,
    *,
    id: str,
    kind: ApprovalKind,
    bot_id: str,
    conversation_id: str,
    text: str,
    now: float,
    task_id: str = "",
    run_id: str = "",
    options: tuple[str, ...] = (),
    default: str | None = None,
    code: str = "",
) -> ApprovalRecord:
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {sorted(_KINDS)}, not {kind!r}")
    row = ApprovalRow(
        id=id,
        kind=kind,
        bot_id=bot_id,
        conversation_id=conversation_id,
        task_id=task_id,
        run_id=run_id,
        text=text,
        options=json.dumps(list(options), ensure_ascii=False),
        default=default,
        code=code,
        created_at=now,
    )
    s.add(row)
    s.flush()
    return _record(row)


def get_approval(s: Session, id: str) -> ApprovalRecord | None:
    row = s.get(ApprovalRow, id)
    return _record(row) if row is not None else None


def open_approvals(s: Session, *, task_id: str | None = None) -> list[ApprovalRecord]:
    """Open questions and approvals, oldest first; of one task when `task_id` is given."""
    query = select(ApprovalRow).where(ApprovalRow.status == "open")
    if task_id is not None:
        query = query.where(ApprovalRow.task_id == task_id)
    return [_record(r) for r in s.scalars(query.order_by(ApprovalRow.created_at, ApprovalRow.id))]


def open_codes(s: Session) -> set[str]:
    return {code for code in s.scalars(select(ApprovalRow.code).where(ApprovalRow.status == "open")) if code}


def decide(
    s: Session, id: str, *, status: ApprovalStatus, now: float, answer: str = "", decided_by: DecidedBy
) -> ApprovalRecord:
    """Close an open item. Deciding one that is no longer open changes nothing and says so (ValueError)."""
    if status not in _STATUSES or status == "open":
        raise ValueError(f"a decision's status must be answered, withdrawn or expired, not {status!r}")
    row = s.get(ApprovalRow, id)
    if row is None:
        raise NotFoundError("approval", id)
    if row.status != "open":
        raise ValueError(f"{id} is already {row.status}")
    row.status = status
    row.answer = answer
    row.decided_by = decided_by
    row.decided_at = now
    s.flush()
    return _record(row)


def _record(row: ApprovalRow) -> ApprovalRecord:
    options = json.loads(row.options) if row.options else []
    return ApprovalRecord(
        id=row.id,
        kind=row.kind,  # type: ignore[arg-type]
        bot_id=row.bot_id,
        conversation_id=row.conversation_id,
        task_id=row.task_id,
        run_id=row.run_id,
        text=row.text,
        options=tuple(str(o) for o in options),
        default=row.default,
        code=row.code,
        status=row.status,  # type: ignore[arg-type]
        answer=row.answer,
        decided_by=row.decided_by,
        created_at=row.created_at,
        decided_at=row.decided_at,
    )
