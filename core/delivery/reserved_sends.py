"""The sends a chat platform's window keeps back for what live work owes a peer
(docs/channels.md#sending): one for each live task and acting rule bound to the conversation, one more for
an open question or approval there, at most RESERVED_MAX. A chat reply and the window nudge may use only
what is left above them."""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.store import approvals as approval_rows
from core.store import rules as rule_rows
from core.store import tasks as task_rows

RESERVED_MAX = 3


def reserved_sends(s: Session, conversation_id: str) -> int:
    live = sum(1 for t in task_rows.tasks_of_conversation(s, conversation_id) if not t.ended_at)
    acting = sum(
        1
        for r in rule_rows.rules_of_conversation(s, conversation_id)
        if r.mode == "act" and not r.paused_reason
    )
    asking = any(a.conversation_id == conversation_id for a in approval_rows.open_approvals(s))
    return min(RESERVED_MAX, live + acting + (1 if asking else 0))
