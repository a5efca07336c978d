"""The `rules` and `rule_versions` tables: standing instructions with a schedule and a mode
(docs/domain.md#rules).

A rule's `version` counts its instructions: each new instruction is a `rule_versions` row, so a run that
recorded its version can still show the words it ran. Only RuleService writes these tables.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, TypedDict, TypeVar, Unpack, cast, get_args

from sqlalchemy import ColumnElement, and_, delete, func, inspect, select
from sqlalchemy.orm import Session

from core.store.chunks import chunked
from core.store.driver_sql import execute_many
from core.store.errors import NotFoundError
from core.store.models import DeliveryRow, RuleRow, RuleVersionRow, RunInputRow, RunRow

RuleKind = Literal["check", "remind"]
RuleMode = Literal["off", "observe", "act"]
# '' while the rule may run; otherwise why the host paused it.
PausedReason = Literal["", "failures", "budget"]
# '' = the default cap, min(bot preset, workspace-write).
GrantedPreset = Literal["", "read-only", "workspace-write", "full"]

# A rule fires from its schedule unless its trigger says an event starts it (docs/runs.md#event-triggers).
SCHEDULE_TRIGGER: Mapping[str, object] = MappingProxyType({"kind": "schedule"})

KINDS: frozenset[str] = frozenset(get_args(RuleKind))
MODES: frozenset[str] = frozenset(get_args(RuleMode))
PAUSED_REASONS: frozenset[str] = frozenset(get_args(PausedReason))
GRANTED_PRESETS: frozenset[str] = frozenset(get_args(GrantedPreset))

_T = TypeVar("_T", bound=str)


@dataclass(frozen=True, slots=True)
class RuleRecord:
    id: str
    bot_id: str
    conversation_id: str
    title: str
    instruction: str
    kind: RuleKind
    mode: RuleMode
    schedule: dict[str, object]
    tz: str
    version: int
    granted_preset: GrantedPreset
    next_run_at: float
    paused_reason: PausedReason
    failures_in_row: int
    created_at: float
    updated_at: float
    observe_ack_version: int = 0  # the version whose observe -> act question was answered 继续观察
    trigger: dict[str, object] = field(default_factory=lambda: dict(SCHEDULE_TRIGGER))
    run_budget_usd: float = 0.10
    month_budget_usd: float = 3.0
    budget_pushed: str = ""  # "YYYY-MM@budget" of the last pushed monthly-budget pause


@dataclass(frozen=True, slots=True)
class RuleVersionRecord:
    rule_id: str
    version: int
    instruction: str
    created_at: float


class RuleChanges(TypedDict, total=False):
    """The fields `update_rule` may change; `updated_at` always becomes `now`. Ids, kind and the origin
    stay as created (a different kind is a different rule)."""

    conversation_id: str
    title: str
    instruction: str
    mode: RuleMode
    schedule: Mapping[str, object]
    tz: str
    version: int
    granted_preset: GrantedPreset
    next_run_at: float
    paused_reason: PausedReason
    failures_in_row: int
    observe_ack_version: int
    trigger: Mapping[str, object]
    run_budget_usd: float
    month_budget_usd: float
    budget_pushed: str


UPDATABLE_FIELDS = frozenset(RuleChanges.__annotations__)


def insert_rule(
    s: Session,
    *,
    id: str,
    bot_id: str,
    conversation_id: str,
    title: str,
    instruction: str,
    schedule: Mapping[str, object],
    tz: str,
    now: float,
    kind: RuleKind = "check",
    mode: RuleMode = "act",
    next_run_at: float = 0.0,
    granted_preset: GrantedPreset = "",
    trigger: Mapping[str, object] | None = None,
) -> RuleRecord:
    """A new rule at version 1. Its first `rule_versions` row is the caller's to add (`insert_version`), in
    the same transaction."""
    row = RuleRow(
        id=id,
        bot_id=bot_id,
        conversation_id=conversation_id,
        title=title,
        instruction=instruction,
        kind=_check("rule kind", kind, KINDS),
        mode=_check("rule mode", mode, MODES),
        schedule=_encode(schedule),
        tz=tz,
        version=1,
        granted_preset=_check("granted preset", granted_preset, GRANTED_PRESETS),
        next_run_at=next_run_at,
        paused_reason="",
        failures_in_row=0,
        created_at=now,
        updated_at=now,
        observe_ack_version=0,
        trigger=_encode(trigger if trigger is not None else SCHEDULE_TRIGGER),
    )
    s.add(row)
    s.flush()
    return _record(row)


def get_rule(s: Session, id: str) -> RuleRecord | None:
    row = s.get(RuleRow, id)
    return None if row is None else _record(row)


def list_rules(s: Session, *, bot_id: str | None = None) -> list[RuleRecord]:
    """Newest first."""
    stmt = select(RuleRow)
    if bot_id is not None:
        stmt = stmt.where(RuleRow.bot_id == bot_id)
    stmt = stmt.order_by(RuleRow.created_at.desc(), RuleRow.id.desc())
    return [_record(row) for row in s.scalars(stmt)]


def rules_of_conversation(s: Session, conversation_id: str) -> list[RuleRecord]:
    """Rules whose results go to this conversation."""
    stmt = select(RuleRow).where(RuleRow.conversation_id == conversation_id)
    return [_record(row) for row in s.scalars(stmt.order_by(RuleRow.created_at, RuleRow.id))]


def _can_fire() -> ColumnElement[bool]:
    """Rules the scheduler may fire: on, not paused, with a next run (event rules have none)."""
    return and_(RuleRow.mode != "off", RuleRow.paused_reason == "", RuleRow.next_run_at > 0)


@dataclass(frozen=True, slots=True)
class DueRuleTime:
    """What the scheduler needs of a due rule, and no more: after a long sleep every rule is due, and
    building a whole RuleRecord (two JSON decodes, ORM objects) for each cost seconds."""

    id: str
    bot_id: str
    next_run_at: float
    schedule_json: str  # as stored; many rules share one, so the reader parses each distinct one once
    tz: str


def due_rule_times(s: Session, *, now: float) -> list[DueRuleTime]:
    """Rules that may fire whose next run is at or before `now`, the earliest first (uses the next_run_at
    index: the scheduler asks on every wake, however many rules there are). A plain Core query of the
    columns it decides on: no ORM objects."""
    stmt = (
        select(RuleRow.id, RuleRow.bot_id, RuleRow.next_run_at, RuleRow.schedule, RuleRow.tz)
        .where(_can_fire(), RuleRow.next_run_at <= now)
        .order_by(RuleRow.next_run_at, RuleRow.id)
    )
    return [DueRuleTime(*row) for row in s.execute(stmt)]


def decode_schedule(encoded: str) -> dict[str, object]:
    """A stored schedule column as its JSON object ({} when unreadable)."""
    return _decode(encoded)


def budget_paused_rules(s: Session) -> list[RuleRecord]:
    """Rules paused at their monthly budget (a WHERE, not a filter over every rule: the scheduler asks on
    every wake)."""
    stmt = select(RuleRow).where(RuleRow.paused_reason == "budget").order_by(RuleRow.id)
    return [_record(row) for row in s.scalars(stmt)]


def budget_paused_zones(s: Session) -> list[str]:
    """The time zones of the rules paused at their monthly budget (each resumes on the next 1st there)."""
    stmt = select(RuleRow.tz).where(RuleRow.paused_reason == "budget").distinct()
    return sorted(s.scalars(stmt))


def rules_by_id(s: Session, ids: Collection[str]) -> list[RuleRecord]:
    found: list[RuleRecord] = []
    for chunk in chunked(sorted(ids)):
        found.extend(_record(row) for row in s.scalars(select(RuleRow).where(RuleRow.id.in_(chunk))))
    return found


def earliest_next_run(s: Session) -> float | None:
    """The earliest next run of any rule that may fire; None when none will."""
    found = s.scalar(select(func.min(RuleRow.next_run_at)).where(_can_fire()))
    return float(found) if found is not None else None


def set_next_runs(s: Session, next_runs: Mapping[str, float | None], *, now: float) -> None:
    """Store many rules' next runs at once (0 for None: it will not run again): one executemany UPDATE,
    not a statement per rule (10,000 of those took seconds after a long sleep)."""
    if not next_runs:
        return
    execute_many(
        s,
        f"UPDATE {RuleRow.__tablename__} SET next_run_at = ?, updated_at = ? WHERE id = ?",
        [(float(at or 0.0), now, rule_id) for rule_id, at in next_runs.items()],
    )
    # Objects this session already holds are expired, so a later read in the same transaction sees the new
    # times.
    for obj in list(s.identity_map.values()):
        if isinstance(obj, RuleRow) and (identity := inspect(obj).identity) and identity[0] in next_runs:
            s.expire(obj, ["next_run_at", "updated_at"])


def update_rule(s: Session, id: str, *, now: float, **fields: Unpack[RuleChanges]) -> RuleRecord:
    """Change the named fields. A bad field or value raises ValueError before anything changes."""
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise ValueError(f"update_rule: cannot change {sorted(unknown)}; allowed: {sorted(UPDATABLE_FIELDS)}")
    values: dict[str, object] = dict(fields)
    if "mode" in fields:
        _check("rule mode", fields["mode"], MODES)
    if "paused_reason" in fields:
        _check("paused reason", fields["paused_reason"], PAUSED_REASONS)
    if "granted_preset" in fields:
        _check("granted preset", fields["granted_preset"], GRANTED_PRESETS)
    if "schedule" in fields:
        values["schedule"] = _encode(fields["schedule"])
    if "trigger" in fields:
        values["trigger"] = _encode(fields["trigger"])
    row = s.get(RuleRow, id)
    if row is None:
        raise NotFoundError("rule", id)
    for name, value in values.items():
        setattr(row, name, value)
    row.updated_at = now
    s.flush()
    return _record(row)


def delete_rule(s: Session, id: str) -> bool:
    """Delete the rule with its versions and its log: runs, their inputs and deliveries (as a deleted task
    takes its own with it). Returns whether the rule existed."""
    row = s.get(RuleRow, id)
    if row is None:
        return False
    s.execute(delete(DeliveryRow).where(DeliveryRow.rule_id == id))
    s.execute(delete(RunInputRow).where(RunInputRow.rule_id == id))
    s.execute(delete(RunRow).where(RunRow.rule_id == id))
    s.execute(delete(RuleVersionRow).where(RuleVersionRow.rule_id == id))
    s.delete(row)
    s.flush()
    return True


def insert_version(
    s: Session, *, rule_id: str, version: int, instruction: str, now: float
) -> RuleVersionRecord:
    row = RuleVersionRow(rule_id=rule_id, version=version, instruction=instruction, created_at=now)
    s.add(row)
    s.flush()
    return _version_record(row)


def versions_of(s: Session, rule_id: str) -> list[RuleVersionRecord]:
    """Oldest first."""
    stmt = select(RuleVersionRow).where(RuleVersionRow.rule_id == rule_id).order_by(RuleVersionRow.version)
    return [_version_record(row) for row in s.scalars(stmt)]


def _check(what: str, value: _T, allowed: frozenset[str]) -> _T:
    # The Literal types check callers statically; this catches values that arrive from JSON or the API.
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; expected one of {sorted(allowed)}")
    return value


def _encode(value: Mapping[str, object]) -> str:
    return json.dumps(dict(value), ensure_ascii=False, allow_nan=False, sort_keys=True)


def _decode(encoded: str) -> dict[str, object]:
    decoded = json.loads(encoded) if encoded else {}
    # Anything but an object is unreadable; the service reports it rather than this layer guessing.
    return decoded if isinstance(decoded, dict) else {}


def _record(row: RuleRow) -> RuleRecord:
    return RuleRecord(
        id=row.id,
        bot_id=row.bot_id,
        conversation_id=row.conversation_id,
        title=row.title,
        instruction=row.instruction,
        kind=cast(RuleKind, _check("rule kind", row.kind, KINDS)),
        mode=cast(RuleMode, _check("rule mode", row.mode, MODES)),
        schedule=_decode(row.schedule),
        tz=row.tz,
        version=row.version,
        granted_preset=cast(GrantedPreset, _check("granted preset", row.granted_preset, GRANTED_PRESETS)),
        next_run_at=row.next_run_at,
        paused_reason=cast(PausedReason, _check("paused reason", row.paused_reason, PAUSED_REASONS)),
        failures_in_row=row.failures_in_row,
        created_at=row.created_at,
        updated_at=row.updated_at,
        observe_ack_version=row.observe_ack_version,
        trigger=_decode(row.trigger) or dict(SCHEDULE_TRIGGER),
        run_budget_usd=row.run_budget_usd,
        month_budget_usd=row.month_budget_usd,
        budget_pushed=row.budget_pushed,
    )


def _version_record(row: RuleVersionRow) -> RuleVersionRecord:
    return RuleVersionRecord(
        rule_id=row.rule_id, version=row.version, instruction=row.instruction, created_at=row.created_at
    )


def observed_done_runs(s: Session, rule_id: str, version: int) -> list[str]:
    """Ids of the rule's observe runs on `version` that ended `done`, newest first (the observe -> act
    question counts these; failed and skipped runs don't count, docs/attention.md#observe-to-act)."""
    stmt = (
        select(RunRow.id)
        .where(
            RunRow.rule_id == rule_id,
            RunRow.rule_version == version,
            RunRow.mode == "observe",
            RunRow.state == "ended",
            RunRow.outcome == "done",
        )
        .order_by(RunRow.ended_at.desc(), RunRow.queued_at.desc(), RunRow.id.desc())
    )
    return list(s.scalars(stmt))
