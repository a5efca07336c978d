"""The plan a planner turn returns, read from its JSON and checked whole (docs/plans.md#the-plan).

    {"subtasks": [
      {"id": "prices", "title": "Collect prices", "brief": "...", "deliverables": ["prices.csv"]},
      {"id": "report", "title": "Write the report", "brief": "...", "dependsOn": ["prices"]}]}

A plan that cannot run (not JSON, no subtasks or more than 8, a subtask with no brief, a dependency on a
subtask that is not there, a cycle) raises PlanError with words the planner's retry is told.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_SUBTASKS = 8
MAX_TITLE = 200
MAX_BRIEF = 8000
MAX_DELIVERABLES = 10
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
# A model often wraps its JSON in a Markdown fence although asked not to; the fence alone is forgiven.
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(?P<body>.*)\n\s*```\s*$", re.DOTALL)


class PlanError(ValueError):
    """Why a plan cannot run, worded for the planner's retry."""


@dataclass(frozen=True, slots=True)
class Subtask:
    id: str
    title: str
    brief: str
    depends_on: tuple[str, ...] = ()
    deliverables: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    subtasks: tuple[Subtask, ...]

    def by_id(self) -> Mapping[str, Subtask]:
        return {s.id: s for s in self.subtasks}

    def waves(self) -> tuple[tuple[str, ...], ...]:
        """The subtasks in rounds: each round's subtasks depend only on earlier rounds'."""
        done: set[str] = set()
        rounds: list[tuple[str, ...]] = []
        left = list(self.subtasks)
        while left:
            ready = tuple(s.id for s in left if set(s.depends_on) <= done)
            rounds.append(ready)
            done.update(ready)
            left = [s for s in left if s.id not in done]
        return tuple(rounds)

    def ready(self, finished: set[str], started: set[str]) -> list[str]:
        """Subtasks that may start now: not started, every dependency finished; in plan order."""
        return [s.id for s in self.subtasks if s.id not in started and set(s.depends_on) <= finished]


def _string(value: object, where: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlanError(f"{where} must be a non-empty string")
    if len(value) > limit:
        raise PlanError(f"{where} is {len(value)} characters; keep it under {limit}")
    return value.strip()


def _strings(value: object, where: str, limit: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PlanError(f"{where} must be a list of strings")
    if len(value) > limit:
        raise PlanError(f"{where} has {len(value)} entries; at most {limit}")
    return tuple(v.strip() for v in value)


def _subtask(raw: object, index: int) -> Subtask:
    where = f"subtasks[{index}]"
    if not isinstance(raw, dict):
        raise PlanError(f"{where} must be an object with id, title and brief")
    ident = raw.get("id")
    if not isinstance(ident, str) or not _ID.match(ident):
        raise PlanError(f"{where}.id must be 1-40 letters, digits, '-' or '_' (got {ident!r})")
    return Subtask(
        id=ident,
        title=_string(raw.get("title"), f"{where}.title", MAX_TITLE),
        brief=_string(raw.get("brief"), f"{where}.brief", MAX_BRIEF),
        depends_on=_strings(raw.get("dependsOn"), f"{where}.dependsOn", MAX_SUBTASKS),
        deliverables=_strings(raw.get("deliverables"), f"{where}.deliverables", MAX_DELIVERABLES),
    )


def _cycle(subtasks: tuple[Subtask, ...]) -> list[str] | None:
    """One dependency cycle as the ids along it, or None."""
    deps = {s.id: s.depends_on for s in subtasks}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in deps[node]:
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (found := visit(dep)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for s in subtasks:
        if s.id not in state and (found := visit(s.id)) is not None:
            return found
    return None


def parse_plan(text: str) -> Plan:
    fenced = _FENCE.match(text)
    body = fenced.group("body") if fenced else text
    try:
        data: Any = json.loads(body)
    except ValueError as exc:
        raise PlanError(f"the plan is not JSON ({exc}); answer with the JSON object only") from None
    if not isinstance(data, dict) or not isinstance(data.get("subtasks"), list):
        raise PlanError('the plan must be an object with a "subtasks" list')
    raw = data["subtasks"]
    if not raw:
        raise PlanError("the plan has no subtasks")
    if len(raw) > MAX_SUBTASKS:
        raise PlanError(f"the plan has {len(raw)} subtasks; at most {MAX_SUBTASKS}: merge the smaller ones")
    subtasks = tuple(_subtask(item, i) for i, item in enumerate(raw))
    seen: set[str] = set()
    for s in subtasks:
        if s.id in seen:
            raise PlanError(f"two subtasks have the id {s.id!r}; give each its own")
        seen.add(s.id)
    for i, s in enumerate(subtasks):
        for dep in s.depends_on:
            if dep == s.id:
                raise PlanError(f"subtasks[{i}] ({s.id!r}) depends on itself")
            if dep not in seen:
                raise PlanError(f"subtasks[{i}] ({s.id!r}) depends on {dep!r}, which is not in the plan")
    cycle = _cycle(subtasks)
    if cycle is not None:
        raise PlanError(f"the dependencies go round in a circle: {' -> '.join(cycle)}")
    return Plan(subtasks)
