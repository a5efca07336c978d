"""The planner's plan: read from JSON (a Markdown fence forgiven), checked whole: at most 8 subtasks, each
with an id, title and brief, dependencies on subtasks that exist and no cycles; run in dependency waves."""

from __future__ import annotations

import json

import pytest

from core.plans.plan import PlanError, Subtask, parse_plan


def _plan(*subtasks: dict[str, object]) -> str:
    return json.dumps({"subtasks": list(subtasks)})


def _s(ident: str, *deps: str, **extra: object) -> dict[str, object]:
    return {
        "id": ident,
        "title": f"Do {ident}",
        "brief": f"Brief for {ident}",
        "dependsOn": list(deps),
        **extra,
    }


def test_a_plan_with_one_dependency_runs_two_then_one() -> None:
    plan = parse_plan(_plan(_s("a", deliverables=["a.csv"]), _s("b"), _s("c", "a", "b")))
    assert plan.subtasks[0] == Subtask("a", "Do a", "Brief for a", (), ("a.csv",))
    assert plan.waves() == (("a", "b"), ("c",))
    assert plan.ready(finished=set(), started=set()) == ["a", "b"]
    assert plan.ready(finished={"a"}, started={"a", "b"}) == []
    assert plan.ready(finished={"a", "b"}, started={"a", "b"}) == ["c"]


def test_a_fenced_plan_is_read() -> None:
    assert parse_plan("```json\n" + _plan(_s("a")) + "\n```").waves() == (("a",),)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Here is my plan: first...", "not JSON"),
        (json.dumps([_s("a")]), '"subtasks" list'),
        (_plan(), "no subtasks"),
        (_plan(*(_s(f"s{i}") for i in range(9))), "9 subtasks; at most 8"),
        (_plan({"id": "a", "title": "A"}), "subtasks[0].brief must be a non-empty string"),
        (_plan({"id": "a b", "title": "A", "brief": "x"}), "subtasks[0].id"),
        (_plan(_s("a"), _s("a")), "two subtasks have the id 'a'"),
        (_plan(_s("a", "z")), "depends on 'z', which is not in the plan"),
        (_plan(_s("a", "a")), "depends on itself"),
        (_plan(_s("a", "c"), _s("b", "a"), _s("c", "b")), "circle: a -> c -> b -> a"),
        (_plan(_s("a", deliverables="a.csv")), "deliverables must be a list of strings"),
    ],
)
def test_a_plan_that_cannot_run_is_refused_with_words_for_the_retry(text: str, says: str) -> None:
    with pytest.raises(PlanError) as refused:
        parse_plan(text)
    assert says in str(refused.value)
