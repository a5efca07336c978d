"""Closing a task's open questions when a run ends done or failed (docs/attention.md#questions)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.store import approvals as approval_rows
from core.store import deliveries as delivery_rows
from core.store.approvals import DecidedBy


def withdraw_open_questions(s: Session, task_id: str, now: float) -> None:
    """Withdraw the task's open questions; one with a default was decided by it. A push still pending or
    held is dropped too; one already sent can't be taken back (a later answer still reaches the task)."""
    for question in approval_rows.open_approvals(s, task_id=task_id):
        if question.kind != "question":
            continue
        by: DecidedBy = "default" if question.default is not None else ""
        approval_rows.decide(s, question.id, status="withdrawn", now=now, decided_by=by)
        ask = delivery_rows.get_delivery(s, f"{question.id}:ask")
        if ask is not None and ask.status in ("pending", "held"):
            delivery_rows.set_delivery_status(s, ask.id, "dropped", held_reason="withdrawn")
