"""The rounds of a goal task (docs/goals.md#rounds): each time the agent reports done, the host checks
every criterion; the task is done only when all passed, and otherwise goes on with what failed, until a
limit says a person must decide.

`GoalState` is what the task row keeps between rounds (and across a restart); `next_round` is the pure
decision taken after each check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from core import translations
from core.goals.file_checks import Source, Verdict
from core.translations import LANGUAGES, Language

MAX_ROUNDS = 5
WALL_CLOCK_S = 60 * 60.0
STALL_ROUNDS = 2  # rounds in a row with neither a changed file nor one more criterion passed

_SOURCES: tuple[Source, ...] = ("command", "file", "model")
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class RoundLimits:
    max_rounds: int = MAX_ROUNDS
    wall_clock_s: float = WALL_CLOCK_S
    stall_rounds: int = STALL_ROUNDS


@dataclass(frozen=True, slots=True)
class GoalState:
    """Where a goal task's rounds stand. `started_at` 0 reads as the task's creation."""

    round: int = 0
    started_at: float = 0.0
    verdicts: tuple[Verdict | None, ...] = ()  # each criterion's last verdict, None before its first
    fingerprint: str = ""  # the task folder's after the last round (core.goals.progress)
    failure_key: str = ""  # what failed in the last round, numbers left out, to see the same failure twice
    stalled: int = 0
    met: bool = False
    stopped: str = ""  # why the rounds stopped without the goal met (English); '' while they go on

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "startedAt": self.started_at,
            "verdicts": [
                None if v is None else {"passed": v.passed, "source": v.source, "detail": v.detail}
                for v in self.verdicts
            ],
            "fingerprint": self.fingerprint,
            "failureKey": self.failure_key,
            "stalled": self.stalled,
            "met": self.met,
            "stopped": self.stopped,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)

    @classmethod
    def loads(cls, text: str) -> GoalState:
        """The stored state; a fresh one for '' (no round yet) or a row that cannot be read."""
        try:
            raw = json.loads(text) if text else {}
        except ValueError:
            raw = {}
        if not isinstance(raw, dict):
            raw = {}
        return cls(
            round=int(raw.get("round") or 0),
            started_at=float(raw.get("startedAt") or 0.0),
            verdicts=tuple(_verdict(v) for v in raw.get("verdicts") or ()),
            fingerprint=str(raw.get("fingerprint") or ""),
            failure_key=str(raw.get("failureKey") or ""),
            stalled=int(raw.get("stalled") or 0),
            met=bool(raw.get("met")),
            stopped=str(raw.get("stopped") or ""),
        )


def _verdict(raw: object) -> Verdict | None:
    if not isinstance(raw, dict):
        return None
    source = raw.get("source")
    return Verdict(
        bool(raw.get("passed")),
        source if source in _SOURCES else "model",
        str(raw.get("detail") or ""),
    )


Decision = Literal["met", "again", "stop"]


@dataclass(frozen=True, slots=True)
class StopReason:
    """Why the rounds stopped, in each language (`goal.reason.<key>` in core's catalogue)."""

    key: str
    fields: Mapping[str, str] = field(default_factory=dict)

    def words(self, lang: Language) -> str:
        return translations.text(lang, f"goal.reason.{self.key}", **self.fields)

    def in_each_language(self) -> dict[str, str]:
        return {lang: self.words(lang) for lang in LANGUAGES}


@dataclass(frozen=True, slots=True)
class RoundResult:
    decision: Decision
    state: GoalState
    stop: StopReason | None = None  # why it stopped, when it did
    failed: tuple[int, ...] = field(default=())  # the indexes of the criteria that failed this round

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        """This round's verdicts, one per criterion."""
        return tuple(v for v in self.state.verdicts if v is not None)


def _failure_key(verdicts: tuple[Verdict, ...]) -> str:
    return "\n".join(f"{i}:{_NUMBERS.sub('#', v.detail)}" for i, v in enumerate(verdicts) if not v.passed)


def next_round(
    before: GoalState,
    verdicts: tuple[Verdict, ...],
    fingerprint: str,
    *,
    now: float,
    created_at: float,
    machine_checks: bool,
    limits: RoundLimits = RoundLimits(),
) -> RoundResult:
    """The decision after a round's checks. `machine_checks`: some criterion is decided by the host, so a
    round that changed no file cannot have got closer."""
    number = before.round + 1
    started = before.started_at or created_at
    failed = tuple(i for i, v in enumerate(verdicts) if not v.passed)
    failure_key = _failure_key(verdicts)
    earlier = before.round > 0
    changed = not earlier or fingerprint != before.fingerprint
    passed_before = sum(1 for v in before.verdicts if v is not None and v.passed)
    closer = sum(1 for v in verdicts if v.passed) > passed_before
    state = GoalState(
        round=number,
        started_at=started,
        verdicts=verdicts,
        fingerprint=fingerprint,
        failure_key=failure_key,
        stalled=0 if (changed or closer) else before.stalled + 1,
    )
    if not failed:
        return RoundResult("met", replace(state, met=True))
    why: StopReason | None = None
    if number >= limits.max_rounds:
        why = StopReason("rounds", {"rounds": str(number)})
    elif now - started >= limits.wall_clock_s:
        why = StopReason("time", {"minutes": f"{limits.wall_clock_s / 60:g}"})
    elif machine_checks and not changed:
        why = StopReason("no_change", {"round": str(number)})
    elif earlier and failure_key == before.failure_key:
        why = StopReason("same_failure")
    elif state.stalled >= limits.stall_rounds:
        why = StopReason("stalled", {"rounds": str(state.stalled)})
    if why is not None:
        return RoundResult("stop", replace(state, stopped=why.words("en")), why, failed)
    return RoundResult("again", state, None, failed)


def restarted(state: GoalState, now: float) -> GoalState:
    """A person's follow-up starts the rounds again: counted afresh from now, last verdicts kept."""
    return GoalState(verdicts=state.verdicts, started_at=now, fingerprint=state.fingerprint)
