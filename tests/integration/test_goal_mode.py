"""Goal mode through the real host (docs/goals.md): a task with acceptance criteria is done only when the
host's own checks pass; a failed round goes on with what failed, and the rounds stop with their reasons."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import httpx

from core.host import Host
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, report
from tests.integration.test_tasks import messages, new_task, wait_stage
from tests.waiting import wait_until

TITLE = "Fix the adder"
# The base interpreter, not the venv's: the sandbox lays an empty /tmp over the system, which hides a venv
# kept under /tmp (as in a CI clone). The check runs the test the way a test runner would: a failed assert
# exits 1 with its traceback.
PYTHON = os.path.realpath(sys.executable)
TEST_CHECK = f"{PYTHON} -B -c 'import test_calc; test_calc.test_add()'"
TESTS = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def write(path: str, content: str) -> Reply:
    return Reply.tool_calls([ToolCallSpec("write_file", {"path": path, "content": content})])


def a_wrong_adder(message: str) -> list[Reply]:
    """The first round: an adder that subtracts, its test, and a claim of done."""
    return [
        write("calc.py", "def add(a, b):\n    return a - b\n"),
        write("test_calc.py", TESTS),
        report("done", "wrote the adder", message=message),
        Reply.text("ok"),
    ]


def tests_pass_criterion() -> list[dict[str, Any]]:
    return [{"text": "the tests pass", "check": {"type": "command", "command": TEST_CHECK}}]


def told_after_checks(script: SessionScript, who: str) -> list[str]:
    """What the host told the agent after each failed round, in order."""
    texts = [str(m.get("content")) for body in script.requests[who] for m in body["messages"]]
    return list(dict.fromkeys(t for t in texts if t.startswith("[Goal check after round")))


async def pushed(host: Host, client: httpx.AsyncClient, cid: str, start: str) -> list[str]:
    async def arrived() -> bool:
        return any(m["text"].startswith(start) for m in await messages(client, cid))

    await wait_until(host.bus, arrived, what=f"a message starting {start!r}")
    return [m["text"] for m in await messages(client, cid) if m["role"] != "user"]


async def test_a_failing_check_sends_the_agent_back_and_the_task_is_done_once_it_passes(
    host: Host, script: SessionScript
) -> None:
    script.add(
        TITLE,
        [
            *a_wrong_adder("The adder is ready."),
            write("calc.py", "def add(a, b):\n    return a + b\n"),
            report("done", "fixed the sign", message="Fixed: add now adds."),
            Reply.text("ok"),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, TITLE, acceptance=tests_pass_criterion())
        done = await wait_stage(host, client, task["id"], "ready", timeout=30)
        # The second round started from what the host saw fail, in the same run.
        [told] = told_after_checks(script, TITLE)
        assert told.startswith("[Goal check after round 1 of 5] 1 of 1 acceptance criteria are not met")
        assert "the tests pass (checked by command):" in told and "exited 1" in told
        assert [r["outcome"] for r in done["runs"]] == ["done"]
        goal = done["goal"]
        assert (goal["round"], goal["met"], goal["stopped"]) == (2, True, "")
        verdict = goal["criteria"][0]["verdict"]
        assert verdict["passed"] is True and verdict["source"] == "command"
        assert verdict["detail"].endswith("exited 0")

        said = await pushed(host, client, task["conversationId"], "Fixed: add now adds.")
        # One push, when the goal is met, naming each criterion's verdict; none after the failed round.
        assert len(said) == 1 and "The adder is ready." not in said[0], said
        assert said[0] == "Fixed: add now adds.\nAll 1 acceptance criteria met: ✓ the tests pass (command)"


async def test_rounds_that_fail_the_same_way_stop_with_the_reason_and_each_criteria_verdict(
    host: Host, script: SessionScript
) -> None:
    script.add(
        TITLE,
        [
            *a_wrong_adder("Ready."),
            write("notes.md", "tried again"),  # one criterion more met: progress
            report("done", "notes written", message="Ready now."),
            Reply.text("ok"),
            write("notes.md", "tried again!"),  # a change, but not a fix
            report("done", "it is fine", message="It really is ready."),
            Reply.text("ok"),
        ],
    )
    async with running_api(host) as client:
        criteria = [
            *tests_pass_criterion(),
            {"text": "a notes file", "check": {"type": "file", "path": "notes.md"}},
        ]
        task = await new_task(client, TITLE, acceptance=criteria)
        failed = await wait_stage(host, client, task["id"], "failed", timeout=30)
        goal = failed["goal"]
        assert failed["runs"][0]["error"] == goal["stopped"], failed["runs"]
        assert goal["round"] == 3 and goal["met"] is False
        assert len(told_after_checks(script, TITLE)) == 2
        assert goal["stopped"] == "the same criteria failed the same way two rounds in a row"
        assert [c["verdict"]["passed"] for c in goal["criteria"]] == [False, True]
        assert failed["runs"][0]["error"] == goal["stopped"]

        said = await pushed(host, client, task["conversationId"], f"“{TITLE}” did not meet its goal")
        assert len(said) == 1
        assert said[0] == (
            f"“{TITLE}” did not meet its goal: the same criteria failed the same way two rounds in a row\n"
            "Last check (round 3): ✗ the tests pass (command); ✓ a notes file (file)"
        )
        # The details stay in the task: what the command printed.
        assert "exited 1; its output ended with:" in goal["criteria"][0]["verdict"]["detail"]


async def test_a_round_that_changes_no_file_stops_at_once(host: Host, script: SessionScript) -> None:
    script.add(
        TITLE,
        [
            report("done", "nothing to do", message="Done."),
            Reply.text("ok"),
            report("done", "still nothing", message="Done, really."),
            Reply.text("ok"),
        ],
    )
    async with running_api(host) as client:
        acceptance = [{"text": "a report", "check": {"type": "file", "path": "report.md"}}]
        task = await new_task(client, TITLE, acceptance=acceptance)
        failed = await wait_stage(host, client, task["id"], "failed", timeout=30)
        assert failed["goal"]["stopped"] == "round 2 changed no file in the task folder"
        assert failed["goal"]["criteria"][0]["verdict"]["detail"] == "report.md does not exist"


async def test_the_judge_must_quote_evidence_that_is_really_there(host: Host, script: SessionScript) -> None:
    criterion = "the summary names the capital of France"
    script.add(
        TITLE,
        [
            report("done", "looked it up", message="Looked it up."),
            Reply.text("ok"),
            report("done", "The capital of France is Paris.", message="Paris."),
            Reply.text("ok"),
        ],
    )

    def verdict(quote: str) -> Reply:
        answer = {"verdicts": [{"criterion": 1, "passed": True, "evidence": quote, "reason": "named"}]}
        return Reply.text(json.dumps(answer))

    # The first answer is not JSON (asked again), the second quotes words that are not in the evidence.
    script.add(f"judge:{TITLE}", [Reply.text("Yes, it does."), verdict("Paris is the capital")])
    script.add(f"judge:{TITLE}", [verdict("capital of France is Paris")])
    async with running_api(host) as client:
        task = await new_task(client, TITLE, acceptance=[criterion])
        done = await wait_stage(host, client, task["id"], "ready", timeout=30)
        [told] = told_after_checks(script, TITLE)
        assert "judged met, but its quote is not in the evidence: 'Paris is the capital'" in told
        retry = script.user_texts(f"judge:{TITLE}", 1)[-1]
        assert "Your previous answer could not be used: the answer is not JSON" in retry
        assert script.tool_names(f"judge:{TITLE}") == []  # the judge has no tools
        verdict_shown = done["goal"]["criteria"][0]["verdict"]
        assert verdict_shown == {
            "passed": True,
            "source": "model",
            "detail": "met: 'capital of France is Paris'",
        }


async def test_bad_criteria_are_refused_and_nothing_is_made(host: Host) -> None:
    async with running_api(host) as client:
        cases: list[tuple[object, str]] = [
            ([], "acceptance"),
            (["x"] * 13, "acceptance"),
            (["y" * 2001], "acceptance[0].text"),
            ([{"text": "t", "check": {"type": "file", "path": "../out"}}], "acceptance[0].check.path"),
            (
                [{"text": "t", "check": {"type": "command", "command": "rm -rf /"}}],
                "acceptance[0].check.command",
            ),
        ]
        for acceptance, field in cases:
            r = await client.post("/api/tasks", json={"text": TITLE, "acceptance": acceptance})
            assert r.status_code == 400, r.text
            assert r.json()["error"]["message"].startswith(field), r.text
        assert (await client.get("/api/tasks")).json()["tasks"] == []
