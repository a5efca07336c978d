"""The `bots` table: who answers, with which model, in which workspace. At most one bot is the default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from core.store.errors import NotFoundError
from core.store.models import BotRow


@dataclass(frozen=True, slots=True)
class BotRecord:
    id: str
    name: str
    workspace: str
    model_provider: str
    model_base_url: str
    model_name: str
    api_key_ref: str
    preset: str
    is_default: bool
    created_at: float
    updated_at: float
    avatar: str = ""
    task_slots: int = 2
    quiet_start: str = "22:00"
    quiet_end: str = "08:00"
    paused: bool = False
    window_nudge: bool = True
    model_images: bool | None = None  # None: as the model is known to (core/bots/model_images.py)


class BotChanges(TypedDict, total=False):
    """The fields `update_bot` may change; ids and timestamps are not among them."""

    name: str
    workspace: str
    model_provider: str
    model_base_url: str
    model_name: str
    api_key_ref: str
    preset: str
    is_default: bool
    avatar: str
    task_slots: int
    quiet_start: str
    quiet_end: str
    window_nudge: bool
    paused: bool
    model_images: bool | None


UPDATABLE_FIELDS = frozenset(BotChanges.__annotations__)


def insert_bot(
    s: Session,
    *,
    id: str,
    name: str,
    workspace: str,
    now: float,
    model_base_url: str = "",
    model_name: str = "",
    model_provider: str = "openai",
    api_key_ref: str = "",
    preset: str = "workspace-write",
    is_default: bool = False,
    model_images: bool | None = None,
) -> BotRecord:
    """A new default bot takes the default flag from whichever bot had it."""
    _require_absolute(workspace)
    if is_default:
        _clear_default(s, now)
    row = BotRow(
        id=id,
        name=name,
        workspace=workspace,
        model_provider=model_provider,
        model_base_url=model_base_url,
        model_name=model_name,
        api_key_ref=api_key_ref,
        preset=preset,
        is_default=is_default,
        model_images=model_images,
        created_at=now,
        updated_at=now,
    )
    s.add(row)
    s.flush()
    return _record(row)


def get_bot(s: Session, id: str) -> BotRecord | None:
    row = s.get(BotRow, id)
    return None if row is None else _record(row)


def list_bots(s: Session) -> list[BotRecord]:
    """The default bot first, then the rest oldest first."""
    rows = s.scalars(select(BotRow).order_by(BotRow.is_default.desc(), BotRow.created_at, BotRow.id))
    return [_record(row) for row in rows]


def default_bot(s: Session) -> BotRecord | None:
    row = s.scalars(
        select(BotRow).where(BotRow.is_default.is_(True)).order_by(BotRow.created_at).limit(1)
    ).first()
    return None if row is None else _record(row)


def update_bot(s: Session, id: str, *, now: float, **fields: Unpack[BotChanges]) -> BotRecord:
    """Change the named fields. An unknown field raises ValueError before anything changes."""
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise ValueError(f"update_bot: cannot change {sorted(unknown)}; allowed: {sorted(UPDATABLE_FIELDS)}")
    if "workspace" in fields:
        _require_absolute(fields["workspace"])
    row = s.get(BotRow, id)
    if row is None:
        raise NotFoundError("bot", id)
    if fields.get("is_default"):
        _clear_default(s, now)
    for name, value in fields.items():
        setattr(row, name, value)
    row.updated_at = now
    s.flush()
    return _record(row)


def _clear_default(s: Session, now: float) -> None:
    s.execute(update(BotRow).where(BotRow.is_default.is_(True)).values(is_default=False, updated_at=now))


def _require_absolute(workspace: str) -> None:
    # A relative workspace would resolve against whatever the process's working directory happens to be.
    if not Path(workspace).is_absolute():
        raise ValueError(f"a bot's workspace must be an absolute path, not {workspace!r}")


def _record(row: BotRow) -> BotRecord:
    return BotRecord(
        id=row.id,
        name=row.name,
        workspace=row.workspace,
        model_provider=row.model_provider,
        model_base_url=row.model_base_url,
        model_name=row.model_name,
        api_key_ref=row.api_key_ref,
        preset=row.preset,
        is_default=row.is_default,
        created_at=row.created_at,
        updated_at=row.updated_at,
        avatar=row.avatar,
        task_slots=row.task_slots,
        quiet_start=row.quiet_start,
        quiet_end=row.quiet_end,
        paused=row.paused,
        window_nudge=row.window_nudge,
        model_images=row.model_images,
    )
