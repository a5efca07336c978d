"""Where a planned task stands, kept across restarts, and the aggregator's answer (docs/plans.md)."""

from __future__ import annotations

import json

import pytest

from core.plans.merge import MergeError, parse_merge, plain_merge
from core.plans.plan import parse_plan
from core.plans.prompts import PartResult
from core.plans.state import PlanState

PLAN = parse_plan(
    json.dumps(
        {
            "subtasks": [
                {"id": "a", "title": "A", "brief": "do a", "deliverables": ["a.txt"]},
                {"id": "b", "title": "B", "brief": "do b", "dependsOn": ["a"]},
            ]
        }
    )
)


def test_the_state_reads_back_as_it_was_written() -> None:
    state = PlanState("running", PLAN, {"a": "t_1", "b": "t_2"}, note="more please")
    assert PlanState.loads(state.dumps()) == state


def test_a_state_that_cannot_be_read_starts_from_planning_and_a_broken_plan_is_dropped() -> None:
    assert PlanState.loads("") == PlanState() == PlanState.loads("{not json")
    broken = json.dumps({"phase": "running", "plan": {"subtasks": []}, "children": {"a": "t_1"}})
    read = PlanState.loads(broken)
    assert (read.phase, read.plan, read.children) == ("running", None, {"a": "t_1"})
    assert PlanState.loads(json.dumps({"phase": "dancing"})).phase == "planning"


def test_the_merge_answer_is_read_strictly() -> None:
    merged = parse_merge('```json\n{"message": " GCP is cheaper. ", "summary": "compared"}\n```')
    assert (merged.message, merged.summary) == ("GCP is cheaper.", "compared")
    with pytest.raises(MergeError, match="not JSON"):
        parse_merge("GCP is cheaper.")
    with pytest.raises(MergeError, match="message must be a non-empty string"):
        parse_merge('{"summary": "x"}')
    with pytest.raises(MergeError, match="at most 300"):
        parse_merge(json.dumps({"message": "x" * 301}))


def test_the_plain_merge_keeps_what_finished_and_says_what_did_not() -> None:
    results = [
        PartResult("Price AWS", "done", "AWS $4.1/h.", "found it", "/w/a"),
        PartResult("Price GCP", "failed", "", "no access", "/w/b"),
    ]
    merged = plain_merge(results)
    assert merged.message == "Price AWS: AWS $4.1/h."
    assert merged.summary == "Price AWS (done): found it\nPrice GCP (failed): no access"
    long = [PartResult(f"P{n}", "done", "m" * 100, "", "/w") for n in range(5)]
    assert len(plain_merge(long).message) == 300
