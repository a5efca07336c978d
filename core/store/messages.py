"""The `messages` table: what was said in a conversation, and how far each message has got.

A user message goes queued -> taken (handed to the agent) -> answered; replies are stored as assistant,
error or notice messages. Recovery after a restart re-delivers user messages still queued or taken.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast, get_args

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.store.errors import NotFoundError
from core.store.models import MessageRow

MessageRole = Literal["user", "assistant", "error", "notice"]
MessageState = Literal["queued", "taken", "answered", "done", "cancelled", "error"]

ROLES: frozenset[str] = frozenset(get_args(MessageRole))
STATES: frozenset[str] = frozenset(get_args(MessageState))
UNANSWERED_STATES: tuple[MessageState, ...] = ("queued", "taken")


@dataclass(frozen=True, slots=True)
class MessageRecord:
    id: int
    conversation_id: str
    role: MessageRole
    text: str
    state: MessageState
    input_id: str
    turn_id: str
    model: str
    tokens_in: int
    tokens_out: int
    duration_ms: int
    activity: list[dict[str, object]]
    created_at: float
    task_id: str = ""  # the task whose result this message is
    rule_id: str = ""  # the rule whose run pushed this message
    channel_ref: str = ""  # the platform's id of it, when we sent it on a chat channel


def insert_message(
    s: Session,
    *,
    conversation_id: str,
    role: MessageRole,
    text: str,
    state: MessageState,
    now: float,
    input_id: str = "",
    turn_id: str = "",
    model: str = "",
    tokens_in: int = 0,
    tokens_out: int = 0,
    duration_ms: int = 0,
    activity: Sequence[Mapping[str, object]] | None = None,
    task_id: str = "",
    source: str = "",
    rule_id: str = "",
) -> MessageRecord:
    row = MessageRow(
        conversation_id=conversation_id,
        role=_role(role),
        text=text,
        state=_state(state),
        input_id=input_id,
        turn_id=turn_id,
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        duration_ms=duration_ms,
        task_id=task_id,
        rule_id=rule_id,
        source=source,
        activity=json.dumps([dict(step) for step in activity or ()], ensure_ascii=False, allow_nan=False),
        created_at=now,
    )
    s.add(row)
    s.flush()  # assigns the id
    return _record(row)


def get_message(s: Session, id: int) -> MessageRecord | None:
    row = s.get(MessageRow, id)
    return None if row is None else _record(row)


def message_from(s: Session, conversation_id: str, source: str) -> MessageRecord | None:
    """The message of this conversation that came from `source` (a channel's stored message), if any."""
    stmt = select(MessageRow).where(
        MessageRow.conversation_id == conversation_id, MessageRow.source == source
    )
    row = s.scalars(stmt.limit(1)).first()
    return None if row is None else _record(row)


def set_channel_ref(s: Session, id: int, ref: str) -> None:
    """Remember the platform's id of a message we sent on a chat channel, so a quote of it finds it."""
    row = s.get(MessageRow, id)
    if row is None:
        raise NotFoundError("message", str(id))
    row.channel_ref = ref


def find_by_channel_ref(s: Session, conversation_id: str, ref: str) -> MessageRecord | None:
    """The message of this conversation that the platform knows as `ref` (what a quote names)."""
    if not ref:
        return None
    stmt = select(MessageRow).where(
        MessageRow.channel_ref == ref, MessageRow.conversation_id == conversation_id
    )
    row = s.scalars(stmt.limit(1)).first()
    return None if row is None else _record(row)


def find_by_channel_ref_anywhere(s: Session, ref: str) -> MessageRecord | None:
    """The message a platform id names, in whichever conversation (a platform's ids are unique)."""
    row = s.scalars(select(MessageRow).where(MessageRow.channel_ref == ref).limit(1)).first()
    return _record(row) if row is not None else None


def list_messages(
    s: Session, conversation_id: str, *, limit: int | None = None, before_id: int | None = None
) -> list[MessageRecord]:
    """Oldest first. With `limit`, the newest `limit` messages (before `before_id`), still oldest first,
    which is the page a chat view shows and then extends upwards with `before_id`."""
    stmt = select(MessageRow).where(MessageRow.conversation_id == conversation_id)
    if before_id is not None:
        stmt = stmt.where(MessageRow.id < before_id)
    if limit is None:
        return [_record(row) for row in s.scalars(stmt.order_by(MessageRow.id))]
    newest = s.scalars(stmt.order_by(MessageRow.id.desc()).limit(limit)).all()
    return [_record(row) for row in reversed(newest)]


def set_message_state(s: Session, id: int, state: MessageState) -> MessageRecord:
    checked = _state(state)
    row = s.get(MessageRow, id)
    if row is None:
        raise NotFoundError("message", id)
    row.state = checked
    s.flush()
    return _record(row)


def set_input_id(s: Session, id: int, input_id: str) -> MessageRecord:
    """Record the agent input id a user message was handed over as (often derived from its own id)."""
    row = s.get(MessageRow, id)
    if row is None:
        raise NotFoundError("message", id)
    row.input_id = input_id
    s.flush()
    return _record(row)


def find_by_input_id(s: Session, input_id: str) -> MessageRecord | None:
    if not input_id:
        return None  # most messages have no input id; '' must not match one of them
    row = s.scalars(select(MessageRow).where(MessageRow.input_id == input_id).order_by(MessageRow.id)).first()
    return None if row is None else _record(row)


def unanswered_user_messages(s: Session) -> list[MessageRecord]:
    """User messages still queued or taken, oldest first, across all conversations."""
    stmt = (
        select(MessageRow)
        .where(MessageRow.role == "user", MessageRow.state.in_(UNANSWERED_STATES))
        .order_by(MessageRow.id)
    )
    return [_record(row) for row in s.scalars(stmt)]


def last_user_message(s: Session, conversation_id: str) -> MessageRecord | None:
    """The person's latest message here: the request a chat turn is answering."""
    row = s.scalars(
        select(MessageRow)
        .where(MessageRow.conversation_id == conversation_id, MessageRow.role == "user")
        .order_by(MessageRow.id.desc())
        .limit(1)
    ).first()
    return _record(row) if row is not None else None


def platform_request_before(s: Session, conversation_id: str, before_id: int) -> MessageRecord | None:
    """The person's latest message before `before_id` that came from a chat platform (it has the
    platform's id): what a chat reply answers, to be threaded under it."""
    row = s.scalars(
        select(MessageRow)
        .where(
            MessageRow.conversation_id == conversation_id,
            MessageRow.role == "user",
            MessageRow.channel_ref != "",
            *((MessageRow.id < before_id,) if before_id else ()),
        )
        .order_by(MessageRow.id.desc())
        .limit(1)
    ).first()
    return _record(row) if row is not None else None


def recent_user_texts(s: Session, conversation_id: str, count: int) -> list[str]:
    """What the person wrote here lately, the newest first (to tell the conversation's language)."""
    stmt = (
        select(MessageRow.text)
        .where(MessageRow.conversation_id == conversation_id, MessageRow.role == "user")
        .order_by(MessageRow.id.desc())
        .limit(count)
    )
    return list(s.scalars(stmt))


def last_bot_message(s: Session, conversation_id: str) -> MessageRecord | None:
    """The bot's latest message here (a reply, a push or a notice): what a bare "2" would answer."""
    row = s.scalars(
        select(MessageRow)
        .where(MessageRow.conversation_id == conversation_id, MessageRow.role != "user")
        .order_by(MessageRow.id.desc())
        .limit(1)
    ).first()
    return _record(row) if row is not None else None


def last_message(s: Session, conversation_id: str) -> MessageRecord | None:
    row = s.scalars(
        select(MessageRow)
        .where(MessageRow.conversation_id == conversation_id)
        .order_by(MessageRow.id.desc())
        .limit(1)
    ).first()
    return None if row is None else _record(row)


def _role(value: str) -> MessageRole:
    # The Literal types check callers statically; this catches values that arrive from JSON or the API.
    if value not in ROLES:
        raise ValueError(f"unknown message role {value!r}; expected one of {sorted(ROLES)}")
    return cast(MessageRole, value)


def _state(value: str) -> MessageState:
    if value not in STATES:
        raise ValueError(f"unknown message state {value!r}; expected one of {sorted(STATES)}")
    return cast(MessageState, value)


def _activity(encoded: str) -> list[dict[str, object]]:
    decoded = json.loads(encoded)
    if not isinstance(decoded, list):
        return []
    return [step for step in decoded if isinstance(step, dict)]


def _record(row: MessageRow) -> MessageRecord:
    return MessageRecord(
        id=row.id,
        conversation_id=row.conversation_id,
        role=_role(row.role),
        text=row.text,
        state=_state(row.state),
        input_id=row.input_id,
        turn_id=row.turn_id,
        model=row.model,
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
        duration_ms=row.duration_ms,
        activity=_activity(row.activity),
        created_at=row.created_at,
        task_id=row.task_id,
        rule_id=row.rule_id,
        channel_ref=row.channel_ref,
    )
