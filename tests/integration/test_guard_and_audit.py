"""The guard and the audit trail through the real host: a task's refused call, what the trail keeps of it,
its exports and the chain check (docs/guard.md, docs/audit.md)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import httpx

from core.host import Host
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.integration.test_tasks import new_task, wait_stage
from tests.waiting import wait_until

TITLE = "Tidy the build"


def tool_outputs(script: SessionScript, who: str) -> list[str]:
    """What the model was told of its tool calls, in order (read off its last request)."""
    return [str(m.get("content")) for m in script.requests[who][-1]["messages"] if m.get("role") == "tool"]


async def task_audit(client: httpx.AsyncClient, task_id: str, **query: str) -> httpx.Response:
    return await client.get(f"/api/tasks/{task_id}/audit", params=query)


async def test_a_refused_call_does_not_run_the_model_is_told_the_rule_and_the_trail_keeps_it(
    host: Host, script: SessionScript, tmp_path: Path
) -> None:
    script.add(
        TITLE,
        [
            bash("rm -rf ../.."),  # the bot's whole workspace, which holds this task's folder
            bash("echo built > out.txt"),
            Reply.tool_calls([ToolCallSpec("write_file", {"path": "notes.md", "content": "inside"})]),
            report("done", "tidied", message="Tidied."),
            Reply.text("ok"),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, TITLE)
        done = await wait_stage(host, client, task["id"], "ready")
        folder = Path(done["folder"])
        assert (folder / "out.txt").read_text() == "built\n" and folder.parent.parent.is_dir()
        told = tool_outputs(script, TITLE)
        assert told[0].startswith("Error: [guard] blocked bash: rule cmd/recursive-force-delete — ")
        assert told[0].endswith("The call did not run.")
        assert told[1].startswith("exit code 0")

        r = await task_audit(client, task["id"])
        assert r.status_code == 200, r.text
        events = r.json()["events"]  # newest first
        kinds = [(e["kind"], e["result"]) for e in reversed(events)]
        # The write inside the task's own folder is the run's own work: not an outside effect.
        assert kinds == [("guard.deny", "blocked"), ("command.exec", "ok")]
        refused = events[1]
        assert refused["rule"] == "cmd/recursive-force-delete" and refused["target"] == "rm -rf ../.."
        assert refused["task"] == task["id"] and refused["run"] == done["runs"][0]["id"]
        assert events[0]["exitCode"] == 0 and events[0]["decision"] == "allow"

        filtered = (await task_audit(client, task["id"], decision="deny")).json()["events"]
        assert [e["id"] for e in filtered] == [refused["id"]]

        r = await task_audit(client, task["id"], format="csv")
        assert r.headers["content-type"].startswith("text/csv")
        assert f"task-{task['id']}-audit.csv" in r.headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(r.text)))
        assert [row["rule"] for row in rows] == ["cmd/recursive-force-delete", ""]

        r = await task_audit(client, task["id"], format="jsonl")
        lines = [json.loads(line) for line in r.text.splitlines()]
        assert [e["hash"] for e in lines] == [e["hash"] for e in reversed(events)]

        check = (await client.get("/api/audit/verify")).json()
        assert check["intact"] is True and check["events"] >= 2 and check["unwritten"] == 0

        exported = (await client.get(f"/api/tasks/{task['id']}/export", params={"lang": "en"})).text
        section = exported.split("## Audit trail\n", 1)[1]
        assert "guard.deny · deny → blocked · `rm -rf ../..` · rule `cmd/recursive-force-delete`" in section
        assert "command.exec · allow → ok · `echo built > out.txt`" in section


async def test_an_edited_trail_is_caught_and_bad_queries_are_refused(
    host: Host, script: SessionScript
) -> None:
    script.add(
        TITLE, [bash("echo one"), bash("echo two"), report("done", "ok", message="ok"), Reply.text("ok")]
    )
    async with running_api(host) as client:
        task = await new_task(client, TITLE)
        await wait_stage(host, client, task["id"], "ready")
        for query, field in (
            ({"format": "xml"}, "format"),
            ({"limit": "0"}, "limit"),
            ({"since": "yesterday"}, "since"),
            ({"colour": "red"}, "colour"),
            ({"task": "t_other"}, "task"),
        ):
            r = await task_audit(client, task["id"], **query)
            assert r.status_code == 400 and field in r.text, (query, r.text)
        assert (await task_audit(client, "t_nope")).status_code == 404

        await host.audit.flush()
        trail = host.audit.trail.path
        lines = trail.read_text().splitlines()
        edited: dict[str, Any] = json.loads(lines[0])
        edited["target"] = "echo nothing to see"
        lines[0] = json.dumps(edited, sort_keys=True, separators=(",", ":"))
        trail.write_text("\n".join(lines) + "\n")
        check = (await client.get("/api/audit/verify")).json()
        assert check["intact"] is False and check["brokenAtLine"] == 1
        assert "edited" in check["reason"]


async def test_a_broken_policy_file_refuses_every_guarded_call(host: Host, script: SessionScript) -> None:
    host.data_dir.mkdir(parents=True, exist_ok=True)
    policy = host.data_dir / "guard-policy.json"
    policy.write_text('{"denyCommands": [}')
    script.add(
        TITLE,
        [bash("echo one"), bash("echo two"), report("done", "ok", message="ok"), Reply.text("ok")],
    )
    async with running_api(host) as client:
        task = await new_task(client, TITLE)
        await wait_stage(host, client, task["id"], "ready")
        told = tool_outputs(script, TITLE)
        assert told[0].startswith("Error: [guard] blocked bash: rule policy/unreadable — ")
        assert str(policy) in told[0] and "line 1 column 19: Expecting value" in told[0]
        assert told[1].startswith("Error: [guard] blocked bash: rule policy/unreadable")


async def test_a_command_stopped_part_way_is_on_the_trail_as_stopped(
    host: Host, script: SessionScript
) -> None:
    script.add(TITLE, [bash("echo begun > begun.txt; sleep 300")])
    async with running_api(host) as client:
        task = await new_task(client, TITLE)

        async def command_started() -> bool:
            run_id = host.tasks.runner.active_run(task["id"])
            live = host.tasks.runner.live_steps(run_id) if run_id else None
            return any("sleep 300" in str(step.get("title")) for step in live or [])

        await wait_until(host.bus, command_started, timeout=10, what="the shell step to start")
        stopped = (await client.post(f"/api/tasks/{task['id']}/stop")).json()
        assert stopped["stage"] == "stopped"
        await host.audit.flush()
        [event] = (await task_audit(client, task["id"])).json()["events"]
        # The command may have done something before it was stopped: the trail says so.
        assert (event["kind"], event["target"], event["result"]) == (
            "command.exec",
            "echo begun > begun.txt; sleep 300",
            "stopped",
        )
