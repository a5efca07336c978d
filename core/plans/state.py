"""Where a planned task stands (docs/plans.md#phases), kept as JSON on its row so a restart goes on from it.

    planning -> running -> merging -> ended

`planning`: the planner turn has not given a valid plan yet (after a restart it is asked again: no plan was
kept). `running`: the plan is kept and its subtasks are tasks of their own (`children`: subtask id -> task
id); after a restart the finished ones are kept and only the others run again. `merging`: every subtask
ended; the aggregator turn merges their reports. `ended`: the planned task's run ended (done, failed, at
its budget, stopped); a follow-up starts the next phase from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast, get_args

from core.plans.plan import Plan, PlanError, Subtask, parse_plan

Phase = Literal["planning", "running", "merging", "ended"]
PHASES: frozenset[str] = frozenset(get_args(Phase))


@dataclass(frozen=True, slots=True)
class PlanState:
    phase: Phase = "planning"
    plan: Plan | None = None
    children: dict[str, str] = field(default_factory=dict)  # subtask id -> its task's id
    note: str = ""  # a person's follow-up the next planning round is given ('' for the first)

    def with_(self, **changes: Any) -> PlanState:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "plan": None if self.plan is None else plan_json(self.plan),
            "children": dict(self.children),
            "note": self.note,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)

    @classmethod
    def loads(cls, text: str) -> PlanState:
        """The stored state. Our own output, read defensively: a plan that no longer reads is dropped, so
        the task plans again rather than run something half-understood."""
        try:
            raw = json.loads(text) if text else {}
        except ValueError:
            raw = {}
        if not isinstance(raw, dict):
            raw = {}
        phase = raw.get("phase")
        plan: Plan | None = None
        if isinstance(raw.get("plan"), dict):
            try:
                plan = parse_plan(json.dumps(raw["plan"]))
            except PlanError:
                plan = None
        children = raw.get("children")
        return cls(
            phase=cast(Phase, phase) if phase in PHASES else "planning",
            plan=plan,
            children={str(k): str(v) for k, v in children.items()} if isinstance(children, dict) else {},
            note=str(raw.get("note") or ""),
        )


def _subtask_json(s: Subtask) -> dict[str, Any]:
    out: dict[str, Any] = {"id": s.id, "title": s.title, "brief": s.brief}
    if s.depends_on:
        out["dependsOn"] = list(s.depends_on)
    if s.deliverables:
        out["deliverables"] = list(s.deliverables)
    return out


def plan_json(plan: Plan) -> dict[str, Any]:
    """The plan as the planner gave it (parse_plan reads it back)."""
    return {"subtasks": [_subtask_json(s) for s in plan.subtasks]}
