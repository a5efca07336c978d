"""The `runs` table: one stretch of work in a session, for a task (launch, answer, ...) or a rule firing.

A run goes queued -> running <-> settling -> ended, and ends with an outcome. `ended` is final: a late state
change or a second ending raises `RunEndedError`, so whichever ended the run first (a stop, a finish, a
restart's recovery) is what the record says.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict, TypeVar, Unpack, cast, get_args

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from core.store.amounts import decode_amounts, encode_amounts
from core.store.chunks import chunked
from core.store.driver_sql import execute_many
from core.store.errors import NotFoundError
from core.store.models import RuleRow, RunRow

RunMode = Literal["act", "observe"]
RunCause = Literal[
    "launch", "answer", "followup", "retry", "continue", "recover", "schedule", "manual", "event"
]
RunState = Literal["queued", "running", "settling", "ended"]
# '' until the run ends.
RunOutcome = Literal["", "done", "needs_you", "failed", "budget", "stopped", "interrupted", "skipped"]
# What `set_run_state` accepts; a run ends only through `end_run`, which records why.
LiveRunState = Literal["queued", "running", "settling"]

MODES: frozenset[str] = frozenset(get_args(RunMode))
CAUSES: frozenset[str] = frozenset(get_args(RunCause))
STATES: frozenset[str] = frozenset(get_args(RunState))
LIVE_STATES: frozenset[str] = frozenset(get_args(LiveRunState))
OUTCOMES: frozenset[str] = frozenset(o for o in get_args(RunOutcome) if o)

_T = TypeVar("_T", bound=str)


class RunEndedError(ValueError):
    """The run has already ended; nothing about its state may change any more."""

    def __init__(self, id: str, outcome: str) -> None:
        super().__init__(f"run {id!r} has already ended ({outcome or 'no outcome'})")
        self.id = id
        self.outcome = outcome


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: str
    bot_id: str
    task_id: str
    rule_id: str
    rule_version: int
    mode: RunMode
    session_id: str
    cause: RunCause
    state: RunState
    outcome: RunOutcome
    report: str
    would: str
    activity: list[dict[str, object]]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    error: str
    nudged: bool
    queued_at: float
    started_at: float
    ended_at: float
    cost_other: dict[str, float] = field(default_factory=dict)  # currency -> amount, never USD
    unpriced_calls: int = 0
    error_words: dict[str, str] = field(default_factory=dict)  # `error` per language, when known

    def error_in(self, lang: str) -> str:
        """The run's error in `lang` when its words are known, else the English `error`."""
        return self.error_words.get(lang) or self.error


class RunChanges(TypedDict, total=False):
    """The fields `update_run` may change. State and outcome change only through their own functions."""

    report: str
    would: str
    activity: Sequence[Mapping[str, object]]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    cost_other: Mapping[str, float]
    unpriced_calls: int
    error: str
    nudged: bool
    session_id: str


UPDATABLE_FIELDS = frozenset(RunChanges.__annotations__)


def insert_run(
    s: Session,
    *,
    id: str,
    bot_id: str,
    session_id: str,
    cause: RunCause,
    now: float,
    task_id: str = "",
    rule_id: str = "",
    rule_version: int = 0,
    mode: RunMode = "act",
) -> RunRecord:
    """A queued run of a task or of a rule: exactly one of `task_id` and `rule_id` is given."""
    if bool(task_id) == bool(rule_id):
        raise ValueError(
            f"a run belongs to exactly one task or rule; got task_id={task_id!r}, rule_id={rule_id!r}"
        )
    row = RunRow(
        id=id,
        bot_id=bot_id,
        task_id=task_id,
        rule_id=rule_id,
        rule_version=rule_version,
        mode=_check("run mode", mode, MODES),
        session_id=session_id,
        cause=_check("run cause", cause, CAUSES),
        state="queued",
        outcome="",
        report="",
        would="",
        activity="[]",
        tokens_in=0,
        tokens_out=0,
        cost_usd=0.0,
        error="",
        nudged=False,
        queued_at=now,
        started_at=0.0,
        ended_at=0.0,
    )
    s.add(row)
    s.flush()
    return _record(row)


def get_run(s: Session, id: str) -> RunRecord | None:
    row = s.get(RunRow, id)
    return None if row is None else _record(row)


def runs_of_task(s: Session, task_id: str) -> list[RunRecord]:
    """Oldest first."""
    if not task_id:
        return []  # rule runs have task_id ''; that must not list them all
    stmt = select(RunRow).where(RunRow.task_id == task_id).order_by(RunRow.queued_at, RunRow.id)
    return [_record(row) for row in s.scalars(stmt)]


def runs_of_tasks(s: Session, task_ids: Collection[str]) -> dict[str, list[RunRecord]]:
    """`runs_of_task` for many tasks in a few queries (a list of 1,000 tasks reads them all)."""
    found: dict[str, list[RunRecord]] = {task_id: [] for task_id in task_ids if task_id}
    for chunk in chunked(list(found)):
        stmt = select(RunRow).where(RunRow.task_id.in_(chunk)).order_by(RunRow.queued_at, RunRow.id)
        for row in s.scalars(stmt):
            found[row.task_id].append(_record(row))
    return found


def latest_run(s: Session, task_id: str) -> RunRecord | None:
    if not task_id:
        return None
    row = s.scalars(
        select(RunRow)
        .where(RunRow.task_id == task_id)
        .order_by(RunRow.queued_at.desc(), RunRow.id.desc())
        .limit(1)
    ).first()
    return None if row is None else _record(row)


def runs_of_rule(
    s: Session, rule_id: str, *, before: float | None = None, limit: int | None = None
) -> list[RunRecord]:
    """A rule's run log, newest first; only runs queued strictly before `before` when it is given."""
    if not rule_id:
        return []  # task runs have rule_id ''; that must not list them all
    stmt = select(RunRow).where(RunRow.rule_id == rule_id)
    if before is not None:
        stmt = stmt.where(RunRow.queued_at < before)
    stmt = stmt.order_by(RunRow.queued_at.desc(), RunRow.id.desc())
    if limit is not None:
        stmt = stmt.limit(limit)
    return [_record(row) for row in s.scalars(stmt)]


def count_runs_of_rule(s: Session, rule_id: str) -> int:
    stmt = select(func.count()).select_from(RunRow).where(RunRow.rule_id == rule_id)
    return int(s.scalar(stmt) or 0)


def rule_costs_since(
    s: Session, rule_ids: Collection[str], since: float
) -> dict[str, list[tuple[float, float]]]:
    """(queued_at, cost_usd) of the priced runs of these rules queued at or after `since`, by rule: the
    month totals are summed from these, each in its rule's own month."""
    found: dict[str, list[tuple[float, float]]] = {}
    for chunk in chunked(list(rule_ids)):
        stmt = select(RunRow.rule_id, RunRow.queued_at, RunRow.cost_usd).where(
            RunRow.rule_id.in_(chunk), RunRow.queued_at >= since, RunRow.cost_usd > 0
        )
        for rule_id, queued_at, cost in s.execute(stmt):
            found.setdefault(rule_id, []).append((queued_at, cost))
    return found


def live_run_of_rule(s: Session, rule_id: str) -> RunRecord | None:
    """The rule's queued, running or settling run, if any (a rule never overlaps itself)."""
    if not rule_id:
        return None
    row = s.scalars(select(RunRow).where(RunRow.rule_id == rule_id, RunRow.state != "ended").limit(1)).first()
    return None if row is None else _record(row)


def rules_with_live_runs(s: Session, rule_ids: Collection[str]) -> set[str]:
    """Which of these rules have a queued, running or settling run (one query per 500 ids)."""
    found: set[str] = set()
    for chunk in chunked([r for r in rule_ids if r]):
        stmt = select(RunRow.rule_id).where(RunRow.rule_id.in_(chunk), RunRow.state != "ended").distinct()
        found.update(s.scalars(stmt))
    return found


def live_rule_ids(s: Session) -> set[str]:
    """Every rule with a queued, running or settling run, in one query on the state index: live runs are a
    handful however many rules and runs there are (the scheduler asks at every wake)."""
    stmt = (
        select(RunRow.rule_id).where(RunRow.state.in_(sorted(LIVE_STATES)), RunRow.rule_id != "").distinct()
    )
    return set(s.scalars(stmt))


@dataclass(frozen=True, slots=True)
class ScheduledRun:
    """A run the scheduler records for a rule's due time: fired (`queued`, or a reminder `ended` `done` at
    once) or not run (`ended` `skipped`, the reason in `error`: missed, paused, overlap). What it records of
    its rule (bot, version, mode) is read from the rule as the run is written."""

    run_id: str
    rule_id: str
    queued_at: float
    state: Literal["queued", "ended"]
    outcome: Literal["", "done", "skipped"] = ""
    error: str = ""
    report: str = ""  # JSON, as `end_run` stores it
    started_at: float = 0.0
    ended_at: float = 0.0


# One row per run, its rule's facts read by the same statement: no read of the rules beforehand, and a rule
# deleted meanwhile gets no run. A run is numbered after its rule's runs so far, those inserted just before it
# in the same executemany included (the session id a run of that rule has; a skipped run never opens one).
# Observe is a check's mode only, as `RuleRunner` queues a run.
_INSERT_SCHEDULED = f"""
INSERT INTO {RunRow.__tablename__} (
    id, bot_id, task_id, rule_id, rule_version, mode, session_id, cause, state, outcome, report, would,
    activity, tokens_in, tokens_out, cost_usd, cost_other, unpriced_calls, error, error_words, nudged,
    queued_at, started_at, ended_at
)
SELECT
    ?, r.bot_id, '', r.id, r.version,
    CASE WHEN r.mode = 'observe' AND r.kind = 'check' THEN 'observe' ELSE 'act' END,
    ? || r.id || '-' || ((SELECT count(*) FROM {RunRow.__tablename__} WHERE rule_id = r.id) + 1),
    'schedule', ?, ?, ?, '', '[]', 0, 0, 0.0, '{{}}', 0, ?, '{{}}', FALSE,
    ?, ?, ?
FROM {RuleRow.__tablename__} r WHERE r.id = ?
"""


def insert_scheduled_runs(s: Session, runs: Sequence[ScheduledRun], *, session_prefix: str) -> set[str]:
    """Record many rules' scheduled runs at once (one executemany: after a long sleep every rule may be
    recorded at once). Returns the rules that got their runs: those that still exist."""
    rows = [
        (
            run.run_id,
            session_prefix,
            _check("run state", run.state, STATES),
            _check("run outcome", run.outcome, OUTCOMES | {""}),
            run.report,
            run.error,
            run.queued_at,
            run.started_at,
            run.ended_at,
            run.rule_id,
        )
        for run in runs
    ]
    if execute_many(s, _INSERT_SCHEDULED, rows) == len(rows):
        return {run.rule_id for run in runs}
    # Some rule was deleted since it was found due: which ones are left is worth a query only then.
    return {run.rule_id for run in runs} & _existing_rules(s, [run.rule_id for run in runs])


def _existing_rules(s: Session, rule_ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in chunked(sorted(set(rule_ids))):
        found.update(s.scalars(select(RuleRow.id).where(RuleRow.id.in_(chunk))))
    return found


def live_runs(s: Session) -> list[RunRecord]:
    """Every run that has not ended (queued, running or settling), oldest queued first."""
    stmt = select(RunRow).where(RunRow.state != "ended").order_by(RunRow.queued_at, RunRow.id)
    return [_record(row) for row in s.scalars(stmt)]


def set_run_state(s: Session, id: str, state: LiveRunState, *, now: float) -> RunRecord:
    """Move a live run to queued, running or settling. Entering running the first time sets `started_at`."""
    if state not in LIVE_STATES:
        raise ValueError(
            f"set_run_state cannot set {state!r}; expected one of {sorted(LIVE_STATES)}"
            " (a run ends only through end_run, which records the outcome)"
        )
    row = _live_row(s, id)
    row.state = state
    if state == "running" and row.started_at == 0:
        row.started_at = now
    s.flush()
    return _record(row)


def end_run(
    s: Session,
    id: str,
    *,
    outcome: RunOutcome,
    now: float,
    error: str = "",
    report: str | None = None,
    error_words: Mapping[str, str] | None = None,
) -> RunRecord:
    """End a live run with an outcome. An empty `error` or a None `report` keeps what the run already has;
    `error_words` is `error` per language ({"zh": ..., "en": ...})."""
    checked = _check("run outcome", outcome, OUTCOMES)
    row = _live_row(s, id)
    row.state = "ended"
    row.outcome = checked
    row.ended_at = now
    if error:
        row.error = error
        row.error_words = json.dumps(dict(error_words or {}), ensure_ascii=False)
    if report is not None:
        row.report = report
    s.flush()
    return _record(row)


def update_run(s: Session, id: str, **fields: Unpack[RunChanges]) -> RunRecord:
    """Change the named fields (an ended run's too: its cost or activity may arrive late).

    An unknown field raises ValueError before anything changes."""
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise ValueError(f"update_run: cannot change {sorted(unknown)}; allowed: {sorted(UPDATABLE_FIELDS)}")
    values: dict[str, object] = dict(fields)
    if "activity" in fields:
        values["activity"] = _encode_activity(fields["activity"])
    if "cost_other" in fields:
        values["cost_other"] = encode_amounts(fields["cost_other"])
    row = s.get(RunRow, id)
    if row is None:
        raise NotFoundError("run", id)
    for name, value in values.items():
        setattr(row, name, value)
    s.flush()
    return _record(row)


def _live_row(s: Session, id: str) -> RunRow:
    row = s.get(RunRow, id)
    if row is None:
        raise NotFoundError("run", id)
    if row.state == "ended":
        raise RunEndedError(id, row.outcome)
    return row


def _check(what: str, value: _T, allowed: frozenset[str]) -> _T:
    # The Literal types check callers statically; this catches values that arrive from JSON or the API.
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; expected one of {sorted(allowed)}")
    return value


def _encode_activity(steps: Sequence[Mapping[str, object]]) -> str:
    return json.dumps([dict(step) for step in steps], ensure_ascii=False, allow_nan=False)


def _decode_activity(encoded: str) -> list[dict[str, object]]:
    decoded = json.loads(encoded) if encoded else []
    if not isinstance(decoded, list):
        return []
    return [step for step in decoded if isinstance(step, dict)]


def _record(row: RunRow) -> RunRecord:
    return RunRecord(
        id=row.id,
        bot_id=row.bot_id,
        task_id=row.task_id,
        rule_id=row.rule_id,
        rule_version=row.rule_version,
        mode=cast(RunMode, _check("run mode", row.mode, MODES)),
        session_id=row.session_id,
        cause=cast(RunCause, _check("run cause", row.cause, CAUSES)),
        state=cast(RunState, _check("run state", row.state, STATES)),
        outcome=cast(RunOutcome, _check("run outcome", row.outcome, OUTCOMES | {""})),
        report=row.report,
        would=row.would,
        activity=_decode_activity(row.activity),
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
        cost_usd=row.cost_usd,
        error=row.error,
        nudged=row.nudged,
        queued_at=row.queued_at,
        started_at=row.started_at,
        ended_at=row.ended_at,
        cost_other=decode_amounts(row.cost_other),
        unpriced_calls=row.unpriced_calls,
        error_words=_decode_words(row.error_words),
    )


def _decode_words(raw: str) -> dict[str, str]:
    try:
        decoded = json.loads(raw or "{}")
    except ValueError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    return {str(k): v for k, v in decoded.items() if isinstance(v, str)}
