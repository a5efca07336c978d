"""The `deliveries` table: the outbox of messages pushed to a conversation (results, questions, failures...).

A delivery's id is stable and chosen by its caller (e.g. `<run id>:result`), so producing the same message
twice, say once before and once after a restart, stores it once. A delivery waits `pending` until it is due,
may be `held` (quiet hours, a closed channel window), and ends `sent` (with the message it became) or
`dropped`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, cast, get_args

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from core.store.chunks import chunked
from core.store.errors import NotFoundError
from core.store.models import DeliveryRow

DeliveryPurpose = Literal[
    "result", "question", "approval", "failure", "rule", "digest", "reminder", "note", "reply", "nudge"
]
# `sending`: handed to a chat platform, its answer not back yet. A crash there leaves it `unsure`: it may or
# may not have arrived, so it is never sent again by itself; needs-you asks the person (docs/channels.md).
DeliveryStatus = Literal["pending", "held", "sending", "unsure", "sent", "dropped"]
# Held for a reason only the person can clear; such a delivery is a needs-you row.
STUCK_REASONS = ("window_closed", "quota", "channel_down")
ASKED_FOR: frozenset[str] = frozenset({"reply"})
"""Purposes a person asked for just now (a chat reply on a channel): outside the attention budget."""

PURPOSES: frozenset[str] = frozenset(get_args(DeliveryPurpose))
STATUSES: frozenset[str] = frozenset(get_args(DeliveryStatus))

_OLDEST_FIRST = (DeliveryRow.created_at, DeliveryRow.id)


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    id: str
    bot_id: str
    conversation_id: str
    task_id: str
    rule_id: str
    run_id: str
    purpose: DeliveryPurpose
    text: str
    files: list[str]
    card: str
    status: DeliveryStatus
    held_reason: str
    attempts: int
    last_error: str
    due_at: float
    sent_at: float
    message_id: int
    created_at: float


def insert_delivery(
    s: Session,
    *,
    id: str,
    bot_id: str,
    conversation_id: str,
    purpose: DeliveryPurpose,
    text: str,
    now: float,
    due_at: float | None = None,
    task_id: str = "",
    rule_id: str = "",
    run_id: str = "",
    files: Sequence[str] | None = None,
    card: str = "",
    message_id: int = 0,
) -> tuple[DeliveryRecord, bool]:
    """Queue a delivery, due at `due_at` (default: now). Returns the record and whether it is new: an id that
    already exists returns the stored delivery, unchanged, and False."""
    checked = _purpose(purpose)
    existing = s.get(DeliveryRow, id)
    if existing is not None:
        return _record(existing), False
    row = DeliveryRow(
        id=id,
        bot_id=bot_id,
        conversation_id=conversation_id,
        task_id=task_id,
        rule_id=rule_id,
        run_id=run_id,
        purpose=checked,
        text=text,
        files=json.dumps(list(files or ()), ensure_ascii=False),
        card=card,
        status="pending",
        held_reason="",
        attempts=0,
        last_error="",
        due_at=now if due_at is None else due_at,
        sent_at=0.0,
        message_id=message_id,
        created_at=now,
    )
    s.add(row)
    s.flush()
    return _record(row), True


def get_delivery(s: Session, id: str) -> DeliveryRecord | None:
    row = s.get(DeliveryRow, id)
    return None if row is None else _record(row)


def pending_deliveries(s: Session, *, now: float) -> list[DeliveryRecord]:
    """Pending deliveries that are due by `now`, the earliest due first."""
    stmt = (
        select(DeliveryRow)
        .where(DeliveryRow.status == "pending", DeliveryRow.due_at <= now)
        .order_by(DeliveryRow.due_at, *_OLDEST_FIRST)
    )
    return [_record(row) for row in s.scalars(stmt)]


def due_deliveries(s: Session, *, now: float) -> list[DeliveryRecord]:
    """Pending or held deliveries whose time has come (a held one is looked at again at its `due_at`)."""
    stmt = (
        select(DeliveryRow)
        .where(DeliveryRow.status.in_(("pending", "held")), DeliveryRow.due_at <= now)
        .order_by(DeliveryRow.due_at, *_OLDEST_FIRST)
    )
    return [_record(row) for row in s.scalars(stmt)]


def next_due(s: Session, *, after: float) -> float | None:
    """When the next pending or held delivery is due after `after`, if any."""
    stmt = select(func.min(DeliveryRow.due_at)).where(
        DeliveryRow.status.in_(("pending", "held")), DeliveryRow.due_at > after
    )
    value = s.scalar(stmt)
    return float(value) if value is not None else None


def reschedule(
    s: Session, id: str, *, status: DeliveryStatus, due_at: float, held_reason: str = ""
) -> DeliveryRecord:
    """Hold or retry later: the new status, reason and the time to look at it again."""
    row = _row(s, id)
    row.status = _status(status)
    row.held_reason = held_reason
    row.due_at = due_at
    s.flush()
    return _record(row)


def asking_messages(s: Session, conversation_id: str) -> dict[int, str]:
    """messages.id -> the question or approval id it pushed, for this conversation's sent asks."""
    return {d.message_id: d.id.split(":", 1)[0] for d in sent_questions(s, conversation_id) if d.message_id}


def sent_questions(s: Session, conversation_id: str) -> list[DeliveryRecord]:
    """Questions and approvals already pushed to this conversation (their ids start with the item's id)."""
    stmt = select(DeliveryRow).where(
        DeliveryRow.conversation_id == conversation_id,
        DeliveryRow.status == "sent",
        DeliveryRow.purpose.in_(("question", "approval")),
    )
    return [_record(row) for row in s.scalars(stmt)]


def out_to(s: Session, conversation_id: str) -> list[DeliveryRecord]:
    """Deliveries of this conversation with a platform now, or that may have reached it (`sending`,
    `unsure`): they count as pushed while they are out."""
    stmt = select(DeliveryRow).where(
        DeliveryRow.conversation_id == conversation_id, DeliveryRow.status.in_(("sending", "unsure"))
    )
    return [_record(row) for row in s.scalars(stmt)]


def stuck_deliveries(s: Session) -> list[DeliveryRecord]:
    """Held because only the person can open the way (window closed, no quota, the channel down)."""
    stmt = select(DeliveryRow).where(
        DeliveryRow.status == "held",
        DeliveryRow.held_reason.in_(STUCK_REASONS),
        DeliveryRow.purpose != "nudge",  # a nudge that cannot go is not needed, never a row
    )
    return [_record(row) for row in s.scalars(stmt.order_by(DeliveryRow.created_at))]


def in_status(s: Session, status: DeliveryStatus) -> list[DeliveryRecord]:
    stmt = select(DeliveryRow).where(DeliveryRow.status == _status(status))
    return [_record(row) for row in s.scalars(stmt.order_by(*_OLDEST_FIRST))]


def sent_since(s: Session, conversation_id: str, since: float) -> list[DeliveryRecord]:
    """Deliveries of this conversation sent at or after `since` (to count them against a daily cap)."""
    stmt = select(DeliveryRow).where(
        DeliveryRow.conversation_id == conversation_id,
        DeliveryRow.status == "sent",
        DeliveryRow.sent_at >= since,
    )
    return [_record(row) for row in s.scalars(stmt)]


def deliveries_of_task(s: Session, task_id: str) -> list[DeliveryRecord]:
    """Oldest first."""
    if not task_id:
        return []  # rule deliveries have task_id ''; that must not list them all
    stmt = select(DeliveryRow).where(DeliveryRow.task_id == task_id).order_by(*_OLDEST_FIRST)
    return [_record(row) for row in s.scalars(stmt)]


def deliveries_of_tasks(s: Session, task_ids: Collection[str]) -> dict[str, list[DeliveryRecord]]:
    """`deliveries_of_task` for many tasks in a few queries."""
    found: dict[str, list[DeliveryRecord]] = {task_id: [] for task_id in task_ids if task_id}
    for chunk in chunked(list(found)):
        stmt = select(DeliveryRow).where(DeliveryRow.task_id.in_(chunk)).order_by(*_OLDEST_FIRST)
        for row in s.scalars(stmt):
            found[row.task_id].append(_record(row))
    return found


def mark_sent(s: Session, id: str, *, now: float, message_id: int) -> DeliveryRecord:
    """Sent, as the conversation's message `message_id`. Clears any held reason."""
    row = _row(s, id)
    row.status = "sent"
    row.held_reason = ""
    row.sent_at = now
    row.message_id = message_id
    s.flush()
    return _record(row)


def mark_failed_attempt(s: Session, id: str, *, error: str) -> DeliveryRecord:
    """Count a failed send and remember why; the status is the caller's to change (retry, hold or drop)."""
    row = _row(s, id)
    row.attempts += 1
    row.last_error = error
    s.flush()
    return _record(row)


def set_attempts(s: Session, id: str, attempts: int) -> None:
    _row(s, id).attempts = attempts


def set_delivery_status(
    s: Session, id: str, status: DeliveryStatus, *, held_reason: str = ""
) -> DeliveryRecord:
    """Set the status and the held reason (which the default clears)."""
    checked = _status(status)
    row = _row(s, id)
    row.status = checked
    row.held_reason = held_reason
    s.flush()
    return _record(row)


def _row(s: Session, id: str) -> DeliveryRow:
    row = s.get(DeliveryRow, id)
    if row is None:
        raise NotFoundError("delivery", id)
    return row


def _purpose(value: str) -> DeliveryPurpose:
    # The Literal types check callers statically; this catches values that arrive from JSON or the API.
    if value not in PURPOSES:
        raise ValueError(f"unknown delivery purpose {value!r}; expected one of {sorted(PURPOSES)}")
    return cast(DeliveryPurpose, value)


def _status(value: str) -> DeliveryStatus:
    if value not in STATUSES:
        raise ValueError(f"unknown delivery status {value!r}; expected one of {sorted(STATUSES)}")
    return cast(DeliveryStatus, value)


def _files(encoded: str) -> list[str]:
    decoded = json.loads(encoded) if encoded else []
    if not isinstance(decoded, list):
        return []
    return [item for item in decoded if isinstance(item, str)]


def _record(row: DeliveryRow) -> DeliveryRecord:
    return DeliveryRecord(
        id=row.id,
        bot_id=row.bot_id,
        conversation_id=row.conversation_id,
        task_id=row.task_id,
        rule_id=row.rule_id,
        run_id=row.run_id,
        purpose=_purpose(row.purpose),
        text=row.text,
        files=_files(row.files),
        card=row.card,
        status=_status(row.status),
        held_reason=row.held_reason,
        attempts=row.attempts,
        last_error=row.last_error,
        due_at=row.due_at,
        sent_at=row.sent_at,
        message_id=row.message_id,
        created_at=row.created_at,
    )
