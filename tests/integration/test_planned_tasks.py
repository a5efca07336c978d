"""Planned tasks through the real host (docs/plans.md): a planner's plan, subtasks in dependency order and
in parallel where they may, one merged result; a plan refused twice fails with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from core.host import Host
from tests.fakes.model_server import Reply
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.integration.test_cost_controls import price_the_model, reported, step
from tests.integration.test_tasks import messages, new_task, wait_stage
from tests.waiting import wait_until

GOAL = "Compare two clouds"
PLAN = {
    "subtasks": [
        {"id": "aws", "title": "Price AWS", "brief": "Find the A100 hourly price on AWS."},
        {"id": "gcp", "title": "Price GCP", "brief": "Find the A100 hourly price on GCP."},
        {
            "id": "report",
            "title": "Write the comparison",
            "brief": "Compare the two prices in report.md.",
            "dependsOn": ["aws", "gcp"],
            "deliverables": ["report.md"],
        },
    ]
}
MERGED = {"message": "AWS $4.1/h, GCP $3.7/h: GCP is cheaper. See report.md.", "summary": "Compared."}


def meet(mine: str, other: str) -> Reply:
    """A step that finishes only while the other subtask works too: it marks itself, then waits for the
    other's mark (bounded, so a plan run one after another fails instead of hanging)."""
    return bash(
        f"touch ../{mine}.ready; for i in $(seq 200); do [ -f ../{other}.ready ] && exit 0; "
        "sleep 0.05; done; exit 1"
    )


def part(mine: str, other: str, message: str) -> list[Reply]:
    return [meet(mine, other), report("done", f"found {message}", message=message), Reply.text("ok")]


async def pushed(host: Host, client: httpx.AsyncClient, cid: str, start: str) -> list[str]:
    async def arrived() -> bool:
        return any(m["text"].startswith(start) for m in await messages(client, cid))

    await wait_until(host.bus, arrived, what=f"a message starting {start!r}")
    return [m["text"] for m in await messages(client, cid) if m["role"] != "user"]


def tool_results(script: SessionScript, who: str) -> list[str]:
    return [str(m.get("content")) for m in script.requests[who][-1]["messages"] if m.get("role") == "tool"]


async def test_a_plan_runs_independent_subtasks_together_then_the_dependent_one_and_merges_once(
    host: Host, script: SessionScript
) -> None:
    script.add(f"plan:{GOAL}", [Reply.text(json.dumps(PLAN))])
    script.add("Price AWS", part("aws", "gcp", "AWS: $4.1/h"))
    script.add("Price GCP", part("gcp", "aws", "GCP: $3.7/h"))
    script.add(
        "Write the comparison",
        [
            bash("echo 'GCP is cheaper' > report.md"),
            report("done", "wrote report.md", message="Wrote report.md.", files=["report.md"]),
            Reply.text("ok"),
        ],
    )
    script.add(f"merge:{GOAL}", [Reply.text(json.dumps(MERGED))])
    async with running_api(host) as client:
        task = await new_task(client, GOAL, plan=True)
        done = await wait_stage(host, client, task["id"], "ready", timeout=30)
        # Both waited for each other, so both worked at once.
        assert tool_results(script, "Price AWS")[0].startswith("exit code 0")
        assert tool_results(script, "Price GCP")[0].startswith("exit code 0")
        # The dependent one started after both, told what they reported.
        brief = script.user_texts("Write the comparison", 0)[-1]
        assert "Your part: Write the comparison" in brief
        assert "AWS: $4.1/h" in brief and "GCP: $3.7/h" in brief

        plan = done["plan"]
        assert plan["phase"] == "ended"
        shown = [(s["id"], s["stage"], s["dependsOn"]) for s in plan["subtasks"]]
        assert shown == [("aws", "ready", []), ("gcp", "ready", []), ("report", "ready", ["aws", "gcp"])]
        assert all(s["steps"] > 0 and s["runs"] == 1 for s in plan["subtasks"])
        folders = [Path(s["folder"]) for s in plan["subtasks"]]
        assert all(f.parent == Path(done["folder"]) / "parts" for f in folders)
        assert (folders[2] / "report.md").read_text() == "GCP is cheaper\n"
        assert done["latestLine"] == MERGED["message"]
        assert done["report"]["files"] == [str(folders[2] / "report.md")]

        said = await pushed(host, client, task["conversationId"], MERGED["message"])
        # One push for the whole goal: none for the subtasks.
        assert said == [MERGED["message"]]
        # The subtasks are parts of the task, not tasks of their own in the list.
        listed = (await client.get("/api/tasks")).json()["tasks"]
        assert [t["id"] for t in listed] == [task["id"]]


async def test_a_plan_that_cannot_run_is_asked_for_again_once_then_the_task_fails_with_why(
    host: Host, script: SessionScript
) -> None:
    cycle = {
        "subtasks": [
            {"id": "a", "title": "A", "brief": "a", "dependsOn": ["b"]},
            {"id": "b", "title": "B", "brief": "b", "dependsOn": ["a"]},
        ]
    }
    script.add(
        f"plan:{GOAL}", [Reply.text("Here is my plan: first A, then B."), Reply.text(json.dumps(cycle))]
    )
    async with running_api(host) as client:
        task = await new_task(client, GOAL, plan=True)
        failed = await wait_stage(host, client, task["id"], "failed", timeout=30)
        retry = script.user_texts(f"plan:{GOAL}", 1)[-1]
        assert "Your previous answer could not be used: the plan is not JSON" in retry
        assert script.tool_names(f"plan:{GOAL}") == []  # the planner has no tools
        error = failed["runs"][0]["error"]
        assert error == (
            "the planner gave no usable plan twice: the dependencies go round in a circle: a -> b -> a"
        )
        assert failed["plan"]["subtasks"] == []  # nothing half-made
        said = await pushed(host, client, task["conversationId"], f"“{GOAL}” did not finish")
        assert len(said) == 1


async def test_plan_must_be_true_or_false(host: Host) -> None:
    async with running_api(host) as client:
        r = await client.post("/api/tasks", json={"text": GOAL, "plan": "yes"})
        assert r.status_code == 400
        assert r.json()["error"]["message"].startswith("plan")
        assert (await client.get("/api/tasks")).json()["tasks"] == []


async def test_a_planned_goal_is_planned_again_with_what_failed_until_its_check_passes(
    host: Host, script: SessionScript
) -> None:
    first = {"subtasks": [{"id": "notes", "title": "Take notes", "brief": "Write notes.md."}]}
    second = {"subtasks": [{"id": "report", "title": "Write the report", "brief": "Write report.md."}]}
    script.add(f"plan:{GOAL}", [Reply.text(json.dumps(first)), Reply.text(json.dumps(second))])
    script.add(
        "Take notes", [bash("echo n > notes.md"), report("done", "notes", message="Notes."), Reply.text("ok")]
    )
    script.add(
        "Write the report",
        [bash("echo r > report.md"), report("done", "report", message="Report."), Reply.text("ok")],
    )
    merged = [
        Reply.text(json.dumps({"message": m, "summary": m})) for m in ("Notes taken.", "Report written.")
    ]
    script.add(f"merge:{GOAL}", merged)
    acceptance = [{"text": "a report", "check": {"type": "command", "command": "ls parts/*/report.md"}}]
    async with running_api(host) as client:
        task = await new_task(client, GOAL, plan=True, acceptance=acceptance)
        done = await wait_stage(host, client, task["id"], "ready", timeout=30)
        replan = script.user_texts(f"plan:{GOAL}", 1)[-1]
        assert (
            "What is still needed (the new subtasks are for this):\n[Goal check after round 1 of 5]" in replan
        )
        assert "Subtasks already done for this task:\n- Take notes (done;" in replan
        assert [s["id"] for s in done["plan"]["subtasks"]] == ["notes", "report"]
        assert (done["goal"]["round"], done["goal"]["met"]) == (2, True)
        said = await pushed(host, client, task["conversationId"], "Report written.")
        assert said == ["Report written.\nAll 1 acceptance criteria met: ✓ a report (command)"]


async def test_a_follow_up_is_steered_into_working_subtasks_and_a_done_plan_is_planned_further(
    host: Host, script: SessionScript
) -> None:
    one = {"subtasks": [{"id": "draft", "title": "Draft it", "brief": "Write draft.md."}]}
    more = {"subtasks": [{"id": "draft", "title": "Translate it", "brief": "Translate draft.md."}]}
    script.add(f"plan:{GOAL}", [Reply.text(json.dumps(one)), Reply.text(json.dumps(more))])
    script.add(
        "Draft it",
        [
            bash("while [ ! -f go ]; do sleep 0.05; done"),
            report("done", "drafted", message="Drafted."),
            Reply.text("ok"),
        ],
    )
    script.add("Translate it", [report("done", "translated", message="Translated."), Reply.text("ok")])
    merges = [
        Reply.text(json.dumps({"message": m, "summary": m})) for m in ("Draft ready.", "Translation ready.")
    ]
    script.add(f"merge:{GOAL}", merges)
    async with running_api(host) as client:
        task = await new_task(client, GOAL, plan=True)

        async def drafting() -> bool:
            parts = (await client.get(f"/api/tasks/{task['id']}")).json()["plan"]["subtasks"]
            return bool(parts) and parts[0]["stage"] == "working" and bool(script.requests["Draft it"])

        await wait_until(host.bus, drafting, timeout=20, what="the draft working")
        r = await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "make it short"})
        assert r.json()["result"] == "steered"
        folder = Path((await client.get(f"/api/tasks/{task['id']}")).json()["plan"]["subtasks"][0]["folder"])
        (folder / "go").write_text("go")
        await wait_stage(host, client, task["id"], "ready", timeout=30)
        told = [str(m.get("content")) for b in script.requests["Draft it"] for m in b["messages"]]
        assert "make it short" in told

        r = await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "now in English"})
        assert r.json()["result"] == "resumed"

        async def translated() -> bool:
            return any(
                m["text"] == "Translation ready." for m in await messages(client, task["conversationId"])
            )

        await wait_until(host.bus, translated, timeout=30, what="the second round's result")
        replan = script.user_texts(f"plan:{GOAL}", 1)[-1]
        assert "What is still needed (the new subtasks are for this):\nnow in English" in replan
        detail = (await client.get(f"/api/tasks/{task['id']}")).json()
        # The second round's subtask got an id of its own: the first one's is kept.
        assert [s["id"] for s in detail["plan"]["subtasks"]] == ["draft", "draft-2"]


async def test_the_budget_covers_the_whole_plan_asks_once_and_goes_on_when_given_more(
    host: Host, script: SessionScript
) -> None:
    """$0.40 a step against the planned task's $1 (docs/plans.md#budget): the subtasks share it."""
    two = {
        "subtasks": [
            {"id": "one", "title": "Part one", "brief": "Do part one."},
            {"id": "two", "title": "Part two", "brief": "Do part two."},
        ]
    }
    script.add(f"plan:{GOAL}", [Reply.text(json.dumps(two), usage=(10, 0))])
    for title in ("Part one", "Part two"):
        script.add(
            title, [step("echo a"), step("echo b"), step("echo c"), reported("done", f"{title} done.")]
        )
    script.add(f"merge:{GOAL}", [Reply.text(json.dumps(MERGED), usage=(10, 0))])
    async with running_api(host) as client:
        await price_the_model(client)
        task = await new_task(client, GOAL, plan=True)
        stopped = await wait_stage(host, client, task["id"], "needs-you/budget", timeout=30)
        assert stopped["spentUsd"] >= 1.0
        parts = stopped["plan"]["subtasks"]
        # What the parts spent is the planned task's spend (the planner's few tokens aside).
        assert sum(p["costUsd"] for p in parts) == pytest.approx(stopped["spentUsd"], abs=0.01)
        assert all(p["stage"] != "working" for p in parts)
        cid = task["conversationId"]
        asked = await pushed(host, client, cid, f"“{GOAL}” has used about")
        assert len(asked) == 1  # the planned task's question; nothing from its parts

        answer = {"answer": "再给 5 美元"}
        r = await client.post(f"/api/attention/task_budget:{task['id']}/answer", json=answer)
        assert r.status_code == 200, r.text
        done = await wait_stage(host, client, task["id"], "ready", timeout=30)
        assert done["budgetUsd"] == pytest.approx(6.0)
        assert [s["stage"] for s in done["plan"]["subtasks"]] == ["ready", "ready"]
        said = await pushed(host, client, cid, MERGED["message"])
        assert said[1:] == [MERGED["message"]]
