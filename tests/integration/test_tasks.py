"""Background tasks end to end: the real host, a real SQLite file and the scripted model over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from core.changes import RunStepAdded
from core.clock import FakeClock
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.waiting import wait_until


async def get_task(client: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    r = await client.get(f"/api/tasks/{task_id}", params={"lang": "en"})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def wait_stage(
    host: Host, client: httpx.AsyncClient, task_id: str, stage: str, timeout: float = 10
) -> dict[str, Any]:
    async def reached() -> bool:
        current: str = (await get_task(client, task_id))["stage"]
        return current == stage

    await wait_until(host.bus, reached, timeout=timeout, what=f"task {task_id} stage {stage}")
    return await get_task(client, task_id)


async def messages(client: httpx.AsyncClient, cid: str) -> list[dict[str, Any]]:
    return list((await client.get(f"/api/conversations/{cid}/messages")).json()["messages"])


async def new_task(client: httpx.AsyncClient, text: str, **body: Any) -> dict[str, Any]:
    r = await client.post("/api/tasks", json={"text": text, **body})
    assert r.status_code == 201, r.text
    return dict(r.json())


async def test_a_task_works_in_its_own_folder_ends_done_and_its_result_arrives_once(
    host: Host, script: SessionScript, tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    script.add(
        "Research GPU prices",
        [
            Reply.tool_calls([ToolCallSpec("write_file", {"path": "report.md", "content": "A100: $1.2/h"})]),
            report(
                "done", "wrote report.md", message="GPU prices are in report.md: A100 is cheapest at $1.2/h."
            ),
            Reply.text("Reported."),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Research GPU prices")
        done = await wait_stage(host, client, task["id"], "ready")
        folder = Path(done["folder"])
        assert folder.parent.name == "tasks" and folder.name.endswith(task["id"].removeprefix("t_"))
        assert (folder / "report.md").read_text() == "A100: $1.2/h"
        assert done["latestLine"].startswith("GPU prices are in report.md")
        assert [r["outcome"] for r in done["runs"]] == ["done"]
        cid = task["conversationId"]

        async def delivered() -> bool:
            return any(m["text"].startswith("GPU prices are in") for m in await messages(client, cid))

        await wait_until(host.bus, delivered, what="the result in the conversation")
        shown = [(m["role"], m["text"]) for m in await messages(client, cid)]
        assert shown[0] == ("user", "Research GPU prices")
        assert shown.count(("assistant", "GPU prices are in report.md: A100 is cheapest at $1.2/h.")) == 1
        # The task session has its own tools: task_report yes, the chat-only tools no.
        tools = script.tool_names("Research GPU prices")
        assert "task_report" in tools and "bash" in tools
        assert not {"task_start", "task_message", "task_list", "ask_user_question", "rule_create"} & set(
            tools
        )
        steps = (await client.get(f"/api/tasks/{task['id']}/runs/{done['runs'][0]['id']}/activity")).json()[
            "steps"
        ]
        assert [s["kind"] for s in steps][:2] == ["model", "tool"]

    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        texts = [m["text"] for m in await messages(client, cid)]
        assert texts.count("GPU prices are in report.md: A100 is cheapest at $1.2/h.") == 1


async def test_the_chat_agent_starts_a_task_and_the_result_comes_back_to_the_conversation(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "chat",
        [
            Reply.tool_calls(
                [ToolCallSpec("task_start", {"title": "Tidy downloads", "brief": "Sort the files."})]
            ),
            Reply.text("好,后台开始整理下载目录,好了告诉你。"),
        ],
    )
    script.add(
        "Tidy downloads", [report("done", "sorted 12 files", message="整理好了:12 个文件分到 3 个文件夹。")]
    )
    async with running_api(host) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "帮我整理一下下载目录"})

        async def result_arrived() -> bool:
            return any(m["text"].startswith("整理好了") for m in await messages(client, cid))

        await wait_until(host.bus, result_arrived, what="the task's result")
        texts = [(m["role"], m["text"]) for m in await messages(client, cid)]
        assert ("assistant", "好,后台开始整理下载目录,好了告诉你。") in texts
        tasks = (await client.get("/api/tasks")).json()["tasks"]
        assert [t["title"] for t in tasks] == ["Tidy downloads"]
        # The reply that started the task carries its chip, and the chip follows the task's stage.
        reply = next(m for m in await messages(client, cid) if m["text"].startswith("好,后台开始"))
        assert [(c["title"], c["group"]) for c in reply["tasks"]] == [("Tidy downloads", "ended")]
        result = next(m for m in await messages(client, cid) if m["text"].startswith("整理好了"))
        assert result["taskId"] == tasks[0]["id"]
        # The brief quotes the user's words verbatim.
        assert "帮我整理一下下载目录" in script.user_texts("Tidy downloads", 0)[0]
        assert {"task_start", "task_message", "task_list"} <= set(script.tool_names("chat"))
        assert "task_report" not in script.tool_names("chat")


async def test_a_turn_without_a_report_gets_one_nudge_then_the_task_fails_and_says_so(
    host: Host, script: SessionScript
) -> None:
    script.add("Summarise logs", [Reply.text("I looked around."), Reply.text("Still looking.")])
    async with running_api(host) as client:
        task = await new_task(client, "Summarise logs")
        failed = await wait_stage(host, client, task["id"], "failed")
        assert failed["runs"][0]["error"] == "没有给出结果"
        nudges = [t for t in script.user_texts("Summarise logs", 1) if "task_report" in t]
        assert len(nudges) == 1
        cid = task["conversationId"]

        async def told() -> bool:
            return any(
                m["role"] == "error" and "Summarise logs" in m["text"] for m in await messages(client, cid)
            )

        await wait_until(host.bus, told, what="the failure message")


async def test_a_background_job_keeps_the_run_settling_and_wakes_the_session(
    host: Host, script: SessionScript
) -> None:
    # The gate lives in the task's folder: the sandbox shows the job nothing of /tmp outside the workspace.
    script.add(
        "Build site",
        [
            bash("while [ ! -f gate ]; do sleep 0.01; done; echo built", run_in_background=True),
            Reply.text("Started the build; waiting for it."),
            report("done", "built", message="The site is built."),
            Reply.text("Done."),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Build site")

        async def settling() -> bool:
            detail = await get_task(client, task["id"])
            return bool(detail["runs"]) and detail["runs"][0]["state"] == "settling"

        await wait_until(host.bus, settling, what="the run settling while its job runs")
        (Path((await get_task(client, task["id"]))["folder"]) / "gate").write_text("go")
        done = await wait_stage(host, client, task["id"], "ready")
        assert [r["outcome"] for r in done["runs"]] == ["done"]
        wake = script.user_texts("Build site", 2)[-1]
        assert "built" in wake and "background job" in wake
        assert not any("task_report" in t for t in script.user_texts("Build site", 2))  # no nudge was needed


async def test_stopping_one_task_leaves_chat_and_another_task_running(
    host: Host, script: SessionScript
) -> None:
    script.add("Slow A", [Reply.hang()])
    script.add("Quick B", [Reply.text("thinking", latency_s=0.3), report("done", "ok", message="B is done.")])
    script.add("chat", [Reply.text("Hello from chat.")])
    async with running_api(host) as client:
        a = await new_task(client, "Slow A")
        b = await new_task(client, "Quick B")
        await wait_stage(host, client, a["id"], "working")
        stopped = (await client.post(f"/api/tasks/{a['id']}/stop")).json()
        assert stopped["stage"] == "stopped"
        done = await wait_stage(host, client, b["id"], "ready")
        assert done["latestLine"] == "B is done."
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})

        async def replied() -> bool:
            return any(m["text"] == "Hello from chat." for m in await messages(client, cid))

        await wait_until(host.bus, replied, what="the chat reply")
        a_detail = await get_task(client, a["id"])
        assert [r["outcome"] for r in a_detail["runs"]] == ["stopped"]
        assert len(script.requests["Slow A"]) == 1  # a stopped task is not nudged or woken again
        r = await client.post(f"/api/tasks/{a['id']}/continue", json={"text": "go on"})
        assert r.status_code == 409 and "stopped" in r.json()["error"]["message"]


async def test_a_follow_up_resumes_a_done_task(host: Host, script: SessionScript) -> None:
    script.add("Write poem", [report("done", "wrote it", message="Here is the poem.")])
    async with running_api(host) as client:
        task = await new_task(client, "Write poem")
        await wait_stage(host, client, task["id"], "ready")
        script.add("Write poem", [report("done", "shorter", message="Here is a shorter poem.")])
        r = await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "make it shorter"})
        assert r.status_code == 202 and r.json()["result"] == "resumed"
        done = await wait_stage(host, client, task["id"], "ready")
        assert [(r["cause"], r["outcome"]) for r in done["runs"]] == [
            ("launch", "done"),
            ("followup", "done"),
        ]
        assert "make it shorter" in script.user_texts("Write poem", -1)


async def test_a_clean_restart_mid_run_recovers_once_without_repeating_inputs(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    script.add("Migrate data", [bash("echo step-one"), Reply.hang()])
    host = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(host) as client:
        task = await new_task(client, "Migrate data")

        await model_server.wait_until(lambda: len(script.requests["Migrate data"]) >= 2, timeout=10)

    script.add("Migrate data", [report("done", "finished", message="Data migrated.")])
    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        done = await wait_stage(again, client, task["id"], "ready")
        assert [(r["cause"], r["outcome"]) for r in done["runs"]] == [
            ("launch", "interrupted"),
            ("recover", "done"),
        ]
        users = script.user_texts("Migrate data", 2)
        assert sum("The app restarted while you were working" in t for t in users) == 1
        assert sum("Migrate data" in t and "The user asked" in t for t in users) == 1  # the brief, once
        cid = task["conversationId"]
        shown = [m["text"] for m in await messages(client, cid)]
        assert shown.count("Data migrated.") == 1


async def test_bad_task_requests_get_clear_errors_and_change_nothing(
    host: Host, script: SessionScript
) -> None:
    async with running_api(host) as client:
        assert (await client.post("/api/tasks", json={})).status_code == 400
        r = await client.post("/api/tasks", json={"text": "x", "budgetUsd": -1})
        assert r.status_code == 400 and "budgetUsd" in r.json()["error"]["message"]
        r = await client.post("/api/tasks", json={"text": "x", "budgetUsd": "lots"})
        assert r.status_code == 400
        assert (await client.post("/api/tasks", json={"text": "x", "botId": "b_none"})).status_code == 404
        assert (await client.get("/api/tasks/t_nope")).status_code == 404
        assert (await client.post("/api/tasks/t_nope/stop")).status_code == 404
        assert (await client.get("/api/tasks", params={"group": "someday"})).status_code == 400
        assert (await client.get("/api/tasks")).json()["tasks"] == []
        assert (await client.get("/api/conversations")).json()["conversations"] == []


async def test_an_invalid_report_is_a_tool_error_and_records_nothing(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "Check site",
        [
            report("finished", "??"),
            report("done", "ok", message="x" * 301),
            report("done", "ok", message="The site is up."),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Check site")
        done = await wait_stage(host, client, task["id"], "ready")
        assert done["latestLine"] == "The site is up."
        tool_replies = [
            m["content"] for body in script.requests["Check site"][1:3] for m in body["messages"][-1:]
        ]
        assert "state" in tool_replies[0] and "300" in tool_replies[1]


async def test_a_bot_with_ten_open_tasks_refuses_an_eleventh(host: Host, script: SessionScript) -> None:
    for i in range(10):
        script.add(f"Task {i}", [Reply.hang()])
    async with running_api(host) as client:
        for i in range(10):
            await new_task(client, f"Task {i}")
        r = await client.post("/api/tasks", json={"text": "Task 10"})
        assert r.status_code == 409 and "10 open tasks" in r.json()["error"]["message"]
        assert len((await client.get("/api/tasks")).json()["tasks"]) == 10


async def advance_when_asleep(clock: FakeClock, seconds: float) -> None:
    """Advance the fake clock once the code under test sleeps exactly `seconds` on it (it has no event to
    wait on); other sleeps, such as the run's time cap, don't count."""
    for _ in range(100_000):
        if clock.sleeping_for(seconds):
            clock.advance(seconds)
            return
        await asyncio.sleep(0)
    raise AssertionError("nothing went to sleep on the fake clock")


async def test_provider_errors_are_retried_after_15_30_60_s_then_the_failure_is_delivered(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    clock = FakeClock(start=1_790_000_000.0)
    host = make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)
    script.add("Fetch quotes", [Reply.error(503)] * 4)
    async with running_api(host) as client:
        task = await new_task(client, "Fetch quotes")
        for attempt, wait in enumerate((15.0, 30.0, 60.0), start=1):
            await model_server.wait_for_requests(attempt, timeout=10)
            before = clock.monotonic()
            await advance_when_asleep(clock, wait)
            assert clock.monotonic() - before == wait
        failed = await wait_stage(host, client, task["id"], "failed")
        assert len(script.requests["Fetch quotes"]) == 4
        assert "503" in failed["runs"][0]["error"] and "tried 4 times" in failed["runs"][0]["error"]
        cid = task["conversationId"]

        async def told() -> bool:
            return any(
                m["role"] == "error" and "Fetch quotes" in m["text"] for m in await messages(client, cid)
            )

        await wait_until(host.bus, told, what="the failure in the conversation")


async def test_the_chat_session_is_told_when_a_result_was_delivered(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("task_start", {"title": "Count words", "brief": "Count them."})]),
            Reply.text("OK, counting in the background."),
        ],
    )
    script.add("Count words", [report("done", "counted", message="There are 42 words.")])
    async with running_api(host) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "count the words in notes.txt"})

        async def delivered() -> bool:
            return any(m["text"] == "There are 42 words." for m in await messages(client, cid))

        await wait_until(host.bus, delivered, what="the result")
        script.add("chat", [Reply.text("It had 42 words.")])
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "how many was it?"})

        async def answered() -> bool:
            return any(m["text"] == "It had 42 words." for m in await messages(client, cid))

        await wait_until(host.bus, answered, what="the chat answer")
        seen = script.user_texts("chat", -1)
        note = [t for t in seen if "Count words" in t and "There are 42 words." in t]
        assert len(note) == 1 and seen[-1] == "how many was it?"


async def test_a_task_waiting_for_a_person_stays_waiting_across_a_restart(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    question = {"question": "Which account should I log in with?", "options": ["Work", "Personal"]}
    script.add("Check billing", [report("needs_you", "need a login", message="I need a login.", **question)])
    host = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(host) as client:
        task = await new_task(client, "Check billing")
        await wait_stage(host, client, task["id"], "needs-you/answer")
        asked = [m["text"] for m in await messages(client, task["conversationId"])]
        assert any("Which account should I log in with?" in t and "Work / Personal" in t for t in asked)

    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        detail = await get_task(client, task["id"])
        assert detail["stage"] == "needs-you/answer"
        assert [r["cause"] for r in detail["runs"]] == ["launch"]  # no recover run for a task that waits
        script.add("Check billing", [report("done", "checked", message="Billing is fine.")])
        assert (
            await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "Work"})
        ).status_code == 202
        done = await wait_stage(again, client, task["id"], "ready")
        assert [r["cause"] for r in done["runs"]] == ["launch", "followup"]


async def test_jobs_still_running_30_minutes_after_the_turn_are_stopped_and_the_session_told(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    clock = FakeClock(start=1_790_000_000.0)
    host = make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)
    script.add(
        "Watch logs",
        [
            bash("sleep 3600", run_in_background=True),
            Reply.text("Watching."),
            report("done", "stopped watching", message="Stopped watching the logs."),
            Reply.text("ok"),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Watch logs")

        async def settling() -> bool:
            runs = (await get_task(client, task["id"]))["runs"]
            return bool(runs) and runs[0]["state"] == "settling"

        await wait_until(host.bus, settling, what="settling while the job runs")
        await advance_when_asleep(clock, 30 * 60)
        done = await wait_stage(host, client, task["id"], "ready")
        assert [r["outcome"] for r in done["runs"]] == ["done"]
        told = script.user_texts("Watch logs", 2)[-1]
        assert "more than 30 minutes" in told and "sleep 3600" in told
        assert not host.runtime.jobs.running(f"task-{task['id']}")


async def test_a_pushed_result_takes_the_message_shape_one_line_at_most_300_characters(
    host: Host, script: SessionScript
) -> None:
    async with running_api(host) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        long_text = "⚠️ The report is ready.\n" + "detail " * 100 + "\nand more"
        pushed = await host.outbox.push(
            delivery_id="r_shape:result", bot_id=bot, conversation_id=cid, purpose="result", text=long_text
        )
        assert pushed
        [shown] = [m["text"] for m in await messages(client, cid)]
        assert len(shown) <= 300 and shown.count("\n") <= 1
        assert shown.startswith("The report is ready.") and shown.endswith("…")  # marker stripped, cut
        again = await host.outbox.push(
            delivery_id="r_shape:result", bot_id=bot, conversation_id=cid, purpose="result", text=long_text
        )
        assert not again and len(await messages(client, cid)) == 1  # a stable id is sent once


async def test_a_working_runs_steps_are_readable_live_before_its_turn_ends(
    host: Host, script: SessionScript
) -> None:
    script.add("Count files", [bash("echo counting"), Reply.hang()])
    steps, unsubscribe = host.bus.queue(lambda e: isinstance(e, RunStepAdded))
    async with running_api(host) as client:
        task = await new_task(client, "Count files")
        await wait_until(
            host.bus,
            lambda: _tool_done(host, task["id"]),  # re-checked after every event
            timeout=10,
            what="the shell step shows while the turn still runs",
        )
        detail = await get_task(client, task["id"])
        run = detail["runs"][0]
        assert run["state"] == "running"
        assert run["steps"] >= 2  # the model's call and the shell tool, before any turn ended
        activity = await host.tasks.run_activity(task["id"], run["id"])
        assert any("echo counting" in str(step.get("title")) for step in activity)
        assert (await steps.get()).task_id == task["id"]
        await client.post(f"/api/tasks/{task['id']}/stop")
    unsubscribe()


async def _tool_done(host: Host, task_id: str) -> bool:
    run_id = host.tasks.runner.active_run(task_id)
    live = host.tasks.runner.live_steps(run_id) if run_id else None
    return bool(live) and any(step.get("kind") == "tool" for step in live or [])
