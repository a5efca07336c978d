"""Rule runs end to end (docs/runs.md#rule-runs): the real host on a fake clock, a real SQLite file and the
scripted model over HTTP. Reminders, act and observe runs, failure pausing, the run log and the scheduler."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.clock import FakeClock
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.rule_api import DAILY_8, NOW, messages, run_log, run_now, wait_ended
from tests.integration.task_script import SessionScript, report
from tests.waiting import wait_until

TITLE = "X price"
WHO = f"rule:{TITLE}"


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    fields = {"title": TITLE, "instruction": "看看 X 的价格,低于 200 告诉我", "schedule": DAILY_8, **body}
    r = await client.post("/api/rules", json=fields)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def test_a_reminder_delivers_its_words_without_a_model_turn(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, model_server: ScriptedModelServer
) -> None:
    rule = await create(client, kind="remind", title="Meeting", instruction="下午 3 点开会")
    run_id = await run_now(client, rule["id"])

    log = await wait_ended(rules_host, client, rule["id"], lang="en")
    assert [(r["id"], r["outcome"], r["mode"], r["cause"]) for r in log] == [
        (run_id, "done", "act", "manual")
    ]
    texts = [m["text"] for m in await messages(client, rule["conversationId"])]
    assert texts.count("下午 3 点开会") == 1
    assert model_server.requests == [] and not script.requests


async def test_an_acting_check_tells_the_user_once_what_it_reported(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    script.add(WHO, [report("done", "price is 199", message="X 降价了,现在 ¥199"), Reply.text("Reported.")])
    rule = await create(client)
    await run_now(client, rule["id"])

    log = await wait_ended(rules_host, client, rule["id"], lang="en")
    assert log[0]["outcome"] == "done" and log[0]["mode"] == "act"
    assert log[0]["said"] == "X 降价了,现在 ¥199" and log[0]["line"] == "Sent: “X 降价了,现在 ¥199”"
    assert log[0]["permission"] == "workspace-write"  # act: the bot's preset, capped at workspace-write
    cid = rule["conversationId"]

    async def delivered() -> bool:
        return any(m["text"] == "X 降价了,现在 ¥199" for m in await messages(client, cid))

    await wait_until(rules_host.bus, delivered, what="the rule's message in its conversation")
    texts = [m["text"] for m in await messages(client, cid)]
    assert texts.count("X 降价了,现在 ¥199") == 1
    # The rule session: the instruction verbatim in its prompt, task_report and the writing tools (act).
    system = script.requests[WHO][0]["messages"][0]["content"]
    assert "看看 X 的价格,低于 200 告诉我" in system and "(none yet)" in system
    assert {"task_report", "write_file", "edit_file"} <= set(script.tool_names(WHO))
    assert not {"task_start", "rule_create", "ask_user_question"} & set(script.tool_names(WHO))


async def test_an_observing_check_never_sends_cannot_write_and_records_what_it_would_have_said(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    script.add(
        WHO,
        [
            Reply.tool_calls([ToolCallSpec("write_file", {"path": "note.md", "content": "x"})]),
            report("done", "price is 199", message="X 降价了,现在 ¥199", would="buy one"),
            Reply.text("Reported."),
        ],
    )
    rule = await create(client, mode="observe")
    await run_now(client, rule["id"])

    log = await wait_ended(rules_host, client, rule["id"], lang="en")
    assert log[0]["outcome"] == "done" and log[0]["mode"] == "observe"
    assert log[0]["would"] == "X 降价了,现在 ¥199" and log[0]["said"] == ""
    assert log[0]["line"] == "Would have sent: “X 降价了,现在 ¥199”"
    assert log[0]["report"]["would"] == "buy one"
    # Its expandable row: the permission it had and its steps (the refused write among them).
    assert log[0]["permission"] == "read-only"
    assert any("write_file" in str(step.get("title")) for step in log[0]["steps"])
    tools = set(script.tool_names(WHO))
    assert "task_report" in tools and not {"write_file", "edit_file"} & tools
    # The refused call came back to the model as an error; nothing was written anywhere.
    second = script.requests[WHO][1]["messages"]
    assert any(m.get("role") == "tool" and "no tool named" in str(m.get("content")) for m in second)
    bot = (await client.get("/api/bots")).json()["bots"][0]
    found = await asyncio.to_thread(lambda: list(Path(bot["workspace"]).rglob("note.md")))
    assert not found
    texts = [m["text"] for m in await messages(client, rule["conversationId"])]
    assert not any("¥199" in t for t in texts)


async def test_three_failed_runs_in_a_row_pause_the_rule(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    rule = await create(client)
    for n in range(1, 4):
        # No report, and none after the nudge either: the run fails.
        script.add(WHO, [Reply.text("looked"), Reply.text("still nothing")])
        await run_now(client, rule["id"])
        log = await wait_ended(rules_host, client, rule["id"], count=n, lang="en")
        assert log[0]["outcome"] == "failed" and log[0]["line"] == "Failed: 没有给出结果"
        paused = (await client.get(f"/api/rules/{rule['id']}")).json()["pausedReason"]
        assert paused == ("failures" if n == 3 else "")
    # The nudge was asked once per run.
    assert len(script.requests[WHO]) == 6


async def test_a_success_resets_the_failure_count(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    rule = await create(client)
    for n, replies in enumerate(
        [
            [Reply.text("a"), Reply.text("b")],
            [Reply.text("a"), Reply.text("b")],
            [report("done", "fine"), Reply.text("ok")],
            [Reply.text("a"), Reply.text("b")],
        ],
        start=1,
    ):
        script.add(WHO, replies)
        await run_now(client, rule["id"])
        await wait_ended(rules_host, client, rule["id"], count=n, lang="en")
    assert (await client.get(f"/api/rules/{rule['id']}")).json()["pausedReason"] == ""


async def test_the_run_log_records_version_and_mode_newest_first(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    rule = await create(client, mode="observe")
    script.add(WHO, [report("done", "quiet"), Reply.text("ok")])
    await run_now(client, rule["id"])
    await wait_ended(rules_host, client, rule["id"], lang="en")
    r = await client.put(f"/api/rules/{rule['id']}", json={"instruction": "看看 Y 的价格", "mode": "act"})
    assert r.status_code == 200 and r.json()["version"] == 2
    clock.advance(60)
    script.add(WHO, [report("done", "quiet"), Reply.text("ok")])
    await run_now(client, rule["id"])

    log = await wait_ended(rules_host, client, rule["id"], count=2, lang="en")
    assert [(e["version"], e["mode"], e["line"]) for e in log] == [
        (2, "act", "Stayed quiet"),
        (1, "observe", "Would have stayed quiet"),
    ]
    zh = await run_log(client, rule["id"], lang="zh")
    assert [e["line"] for e in zh] == ["保持安静", "本会保持安静"]
    # The second run's prompt has the first one's Report, and the new words.
    system = script.requests[WHO][2]["messages"][0]["content"]
    assert "看看 Y 的价格" in system and "done: quiet" in system
    assert await run_log(client, rule["id"], before=str(log[0]["time"])) == [
        e for e in await run_log(client, rule["id"]) if e["id"] == log[1]["id"]
    ]


async def test_run_now_is_refused_while_a_run_of_the_rule_is_live(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, model_server: ScriptedModelServer
) -> None:
    rule = await create(client)
    script.add(WHO, [Reply.hang()])
    await run_now(client, rule["id"])
    await model_server.wait_for_requests(1)
    r = await client.post(f"/api/rules/{rule['id']}/run")
    assert r.status_code == 409, r.text
    assert (await client.post("/api/rules/ru_000000000000/run")).status_code == 404


async def test_a_due_rule_fires_from_the_scheduler_on_the_fake_clock(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    script.add(WHO, [report("done", "price is 199", message="X 现在 ¥199"), Reply.text("ok")])
    rule = await create(client)
    assert await run_log(client, rule["id"]) == []

    clock.advance(rule["nextRunAt"] - clock.time() + 1)

    log = await wait_ended(rules_host, client, rule["id"], lang="en")
    assert [(e["cause"], e["outcome"]) for e in log] == [("schedule", "done")]
    after = (await client.get(f"/api/rules/{rule['id']}")).json()
    assert after["nextRunAt"] == rule["nextRunAt"] + 24 * 3600


async def test_a_rule_missed_by_more_than_its_grace_is_skipped_and_says_why(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    rule = await create(client)
    # The machine slept through it: the wall clock jumped far past the due time.
    clock.jump_wall(rule["nextRunAt"] - clock.time() + 5 * 3600)
    await rules_host.resync("resume")

    log = await run_log(client, rule["id"], lang="zh")
    assert [(e["cause"], e["outcome"], e["reason"], e["line"]) for e in log] == [
        ("schedule", "skipped", "missed", "跳过:电脑没开")
    ]
    assert not script.requests


async def test_a_schedule_edit_while_a_run_is_in_flight_takes_effect_from_the_next_run(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, model_server: ScriptedModelServer
) -> None:
    rule = await create(client)
    script.add(WHO, [Reply.hang()])
    run_id = await run_now(client, rule["id"])
    await model_server.wait_for_requests(1)

    every_hour = {"kind": "every", "minutes": 60, "tz": "Asia/Shanghai"}
    r = await client.put(f"/api/rules/{rule['id']}", json={"schedule": every_hour})
    assert r.status_code == 200, r.text
    edited = r.json()
    # The next run follows the new schedule at once (the next whole hour from now)...
    assert edited["nextRunAt"] == (NOW // 3600 + 1) * 3600
    # ...and the run in flight carries on untouched.
    [live] = await run_log(client, rule["id"])
    assert (live["id"], live["state"]) == (run_id, "running")
    assert live["version"] == rule["version"]


async def test_a_scheduled_run_that_waits_for_a_slot_past_its_grace_is_skipped(
    rules_host: Host,
    client: httpx.AsyncClient,
    script: SessionScript,
    clock: FakeClock,
    model_server: ScriptedModelServer,
) -> None:
    bot = (await client.get("/api/bots")).json()["bots"][0]
    assert (await client.put(f"/api/bots/{bot['id']}", json={"taskSlots": 1})).status_code == 200
    script.add("Long job", [Reply.hang()])
    task = (await client.post("/api/tasks", json={"text": "Long job"})).json()
    await model_server.wait_for_requests(1)  # the task holds the bot's only slot

    every_30 = {"kind": "every", "minutes": 30, "tz": "Asia/Shanghai"}  # grace: 15 minutes
    rule = await create(client, schedule=every_30)
    clock.advance(rule["nextRunAt"] - clock.time() + 1)

    async def queued() -> bool:
        return [e["state"] for e in await run_log(client, rule["id"])] == ["queued"]

    await wait_until(rules_host.bus, queued, what="the firing waiting for a slot")
    clock.advance(20 * 60)  # past its grace while it waits
    assert (await client.post(f"/api/tasks/{task['id']}/stop")).status_code == 200

    log = await wait_ended(rules_host, client, rule["id"], lang="en")
    assert [(e["cause"], e["outcome"], e["reason"]) for e in log] == [("schedule", "skipped", "late")]
    assert log[0]["line"] == "Skipped: no free slot in time"
    assert script.requests.get(WHO, []) == []  # it never asked the model


async def test_a_failure_after_a_firing_is_stored_does_not_keep_the_scheduler_from_the_next_one(
    rules_host: Host,
    client: httpx.AsyncClient,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    rule = await create(client, kind="remind", title="Meeting", instruction="下午 3 点开会")
    real_flush = rules_host.outbox.flush
    broken = True

    async def flush() -> None:
        if broken:
            raise RuntimeError("the outbox is unavailable")
        await real_flush()

    monkeypatch.setattr(rules_host.outbox, "flush", flush)
    clock.advance(rule["nextRunAt"] - clock.time() + 1)
    first = await wait_ended(rules_host, client, rule["id"])
    assert [(e["cause"], e["outcome"]) for e in first] == [("schedule", "done")]
    assert "after scheduled firings" in caplog.text

    # The firing was stored with its next run, and the scheduler set its timer for it.
    broken = False
    after = (await client.get(f"/api/rules/{rule['id']}")).json()
    assert after["nextRunAt"] == rule["nextRunAt"] + 24 * 3600
    clock.advance(24 * 3600)
    both = await wait_ended(rules_host, client, rule["id"], count=2)
    assert [e["cause"] for e in both] == ["schedule", "schedule"]

    # The first reminder was held while the outbox failed; both reach the person (held ones go together).
    async def said_twice() -> bool:
        texts: list[str] = [m["text"] for m in await messages(client, rule["conversationId"])]
        return sum(t.count("下午 3 点开会") for t in texts) == 2

    await wait_until(rules_host.bus, said_twice, what="both reminders in the conversation")
