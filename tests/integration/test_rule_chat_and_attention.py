"""Rules from chat and in needs-you (docs/chat.md#rules-from-chat, docs/runs.md#rule-runs, docs/attention.md):
the chat agent's rule_create, a rule paused after failures, the observe -> act question, approvals in rule
runs and event triggers. The real host on a fake clock, a real SQLite file and the scripted model over
HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from core.clock import FakeClock
from core.host import Host
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.rule_api import DAILY_8, messages, run_log, run_now, wait_ended
from tests.integration.task_script import SessionScript, bash, report
from tests.waiting import wait_until

WORDS = "每天早上 8 点看看 X 的价格,低于 200 告诉我"
TITLE = "X price"
WHO = f"rule:{TITLE}"


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    fields = {"title": TITLE, "instruction": WORDS, "schedule": DAILY_8, **body}
    r = await client.post("/api/rules", json=fields)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def attention(client: httpx.AsyncClient, lang: str = "zh") -> list[dict[str, Any]]:
    return list((await client.get("/api/attention", params={"lang": lang})).json()["items"])


async def say(host: Host, client: httpx.AsyncClient, text: str, reply: str) -> str:
    """The person says `text` in a new conversation; returns its id once `reply` has arrived."""
    cid = str((await client.post("/api/conversations", json={})).json()["id"])
    r = await client.post(f"/api/conversations/{cid}/messages", json={"text": text})
    assert r.status_code in (200, 201, 202), r.text

    async def replied() -> bool:
        return any(m["role"] == "assistant" and m["text"] == reply for m in await messages(client, cid))

    await wait_until(host.bus, replied, what=f"the reply {reply!r}")
    return cid


def rule_create(**args: Any) -> Reply:
    return Reply.tool_calls([ToolCallSpec("rule_create", args)])


def tool_results(script: SessionScript, who: str, index: int) -> list[str]:
    return [str(m.get("content")) for m in script.requests[who][index]["messages"] if m.get("role") == "tool"]


# -- rule_create from chat --------------------------------------------------------------------------


async def test_the_chat_agent_creates_an_acting_rule_with_the_users_words_verbatim(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    confirmation = "已建好规则:每天 08:00 看 X 价格,有值得说的就告诉你。"
    script.add(
        "chat",
        [rule_create(title="看 X 价格", instruction=WORDS, schedule=DAILY_8), Reply.text(confirmation)],
    )
    cid = await say(rules_host, client, WORDS, confirmation)

    [rule] = (await client.get("/api/rules")).json()["rules"]
    assert (rule["title"], rule["instruction"], rule["mode"], rule["kind"]) == (
        "看 X 价格",
        WORDS,
        "act",
        "check",
    )
    assert rule["conversationId"] == cid and rule["trigger"] == {"kind": "schedule"}
    # The tool told the model how to confirm: once, with the schedule in words.
    [result] = tool_results(script, "chat", 1)
    assert "每天 08:00" in result and "有值得说的就告诉你" in result and "once" in result
    assert "rule_create" in script.tool_names("chat")
    system = script.requests["chat"][0]["messages"][0]["content"]
    assert "rule_create" in system and "task_start" in system
    # One reply: the confirmation, and no run yet (the rule runs on its schedule).
    replies = [m["text"] for m in await messages(client, cid) if m["role"] == "assistant"]
    assert replies == [confirmation]
    assert await run_log(client, rule["id"]) == []


async def test_the_chat_agent_creates_an_observing_rule_when_the_user_asks_to_watch_first(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    confirmation = "已建好规则:每天 08:00 看 X 价格,先观察几天,只记录不打扰你。"
    words = WORDS + ",先观察"
    script.add(
        "chat",
        [
            rule_create(title="看 X 价格", instruction=words, schedule=DAILY_8, mode="observe"),
            Reply.text(confirmation),
        ],
    )
    await say(rules_host, client, words, confirmation)

    [rule] = (await client.get("/api/rules")).json()["rules"]
    assert (rule["instruction"], rule["mode"]) == (words, "observe")
    [result] = tool_results(script, "chat", 1)
    assert "先观察几天,只记录不打扰你" in result


async def test_a_bad_schedule_reaches_the_model_as_a_tool_error_and_creates_nothing(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    script.add(
        "chat",
        [
            rule_create(title="看 X 价格", instruction=WORDS, schedule={"kind": "daily", "time": "25:00"}),
            Reply.text("时间不对,我没建成。"),
        ],
    )
    await say(rules_host, client, WORDS, "时间不对,我没建成。")

    [error] = tool_results(script, "chat", 1)
    assert "not created" in error and "schedule.time" in error and "rule_create again" in error
    assert (await client.get("/api/rules")).json()["rules"] == []


# -- a rule paused after failures -----------------------------------------------------------------------


async def test_three_failures_put_a_paused_rule_in_needs_you_pushed_once_and_retry_runs_it_again(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    rule = await create(client)
    for n in range(1, 4):
        script.add(WHO, [Reply.text("looked"), Reply.text("still nothing")])
        await run_now(client, rule["id"])
        await wait_ended(rules_host, client, rule["id"], count=n)
        if n < 3:
            assert not [i for i in await attention(client) if i["kind"] == "rule_paused"]

    [item] = await attention(client)
    assert (item["id"], item["kind"], item["severity"]) == (
        f"rule_paused:{rule['id']}",
        "rule_paused",
        "error",
    )
    assert item["subject"] == "规则「X price」连续失败 3 次,已暂停" and item["line"] == "没有给出结果"
    assert set(item["actions"]) == {"retry", "open"} and item["ruleId"] == rule["id"]
    cid = rule["conversationId"]

    async def pushed() -> bool:
        return any("已暂停" in m["text"] for m in await messages(client, cid))

    await wait_until(rules_host.bus, pushed, what="the paused rule's push")
    assert sum("已暂停" in m["text"] for m in await messages(client, cid)) == 1

    opened = await client.post(f"/api/attention/{item['id']}/open")
    assert opened.status_code == 200 and opened.json()["ruleId"] == rule["id"]
    script.add(WHO, [report("done", "price is 259"), Reply.text("ok")])
    r = await client.post(f"/api/attention/{item['id']}/retry")
    assert r.status_code == 200, r.text
    assert r.json()["ruleId"] == rule["id"]
    assert (await client.get(f"/api/rules/{rule['id']}")).json()["pausedReason"] == ""
    assert await attention(client) == []

    log = await wait_ended(rules_host, client, rule["id"], count=4)
    retried = next(e for e in log if e["id"] == r.json()["runId"])  # same fake-clock time: order by id
    assert (retried["cause"], retried["outcome"]) == ("manual", "done")
    assert sum("已暂停" in m["text"] for m in await messages(client, cid)) == 1


# -- observe -> act -------------------------------------------------------------------------------------


async def observe_good_runs(
    host: Host, client: httpx.AsyncClient, script: SessionScript, rule_id: str, count: int, done_before: int
) -> None:
    assert isinstance(host.clock, FakeClock)
    for n in range(1, count + 1):
        host.clock.advance(60)  # each run ends at its own time, so "the latest" is well defined
        script.add(WHO, [report("done", "checked", message=f"X 降价了,现在 ¥19{n}"), Reply.text("ok")])
        await run_now(client, rule_id)
        await wait_ended(host, client, rule_id, count=done_before + n)


async def test_three_good_observed_runs_ask_whether_to_act_and_acting_removes_the_question(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    rule = await create(client, mode="observe")
    # A failed run does not count.
    script.add(WHO, [Reply.text("a"), Reply.text("b")])
    await run_now(client, rule["id"])
    await wait_ended(rules_host, client, rule["id"])
    await observe_good_runs(rules_host, client, script, rule["id"], 2, done_before=1)
    assert await attention(client) == []

    await observe_good_runs(rules_host, client, script, rule["id"], 1, done_before=3)
    [item] = await attention(client)
    assert (item["kind"], item["severity"], item["ruleId"]) == ("observe_ready", "info", rule["id"])
    assert item["subject"] == "规则「X price」已观察 3 次,需要你来决定是否执行"
    assert item["line"] == "本会发送:“X 降价了,现在 ¥191”"
    assert item["options"] == ["改为执行", "继续观察"]
    cid = rule["conversationId"]
    assert not any("¥19" in m["text"] for m in await messages(client, cid))  # observe told nobody

    r = await client.post(f"/api/attention/{item['id']}/answer", json={"answer": "改为执行"})
    assert r.status_code == 200, r.text
    assert r.json()["mode"] == "act"
    assert (await client.get(f"/api/rules/{rule['id']}")).json()["mode"] == "act"
    assert await attention(client) == []


async def test_keep_observing_hides_the_question_for_that_version_and_a_new_version_asks_again(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    rule = await create(client, mode="observe")
    await observe_good_runs(rules_host, client, script, rule["id"], 3, done_before=0)
    [item] = await attention(client)
    r = await client.post(f"/api/attention/{item['id']}/answer", json={"answer": "2"})
    assert r.status_code == 200 and r.json()["mode"] == "observe"
    assert await attention(client) == []
    await observe_good_runs(rules_host, client, script, rule["id"], 1, done_before=3)
    assert await attention(client) == []  # still the same version: it does not ask again

    edited = await client.put(
        f"/api/rules/{rule['id']}", json={"instruction": "看看 X 的价格,低于 180 告诉我"}
    )
    assert edited.json()["version"] == 2 and edited.json()["mode"] == "observe"
    await observe_good_runs(rules_host, client, script, rule["id"], 2, done_before=4)
    assert await attention(client) == []
    await observe_good_runs(rules_host, client, script, rule["id"], 1, done_before=6)
    [again] = await attention(client, lang="en")
    assert again["kind"] == "observe_ready" and again["options"] == ["Act from now on", "Keep observing"]


# -- approvals in rule runs ---------------------------------------------------------------------------


async def test_an_acting_runs_approval_waits_in_needs_you_titled_with_the_rule_and_approving_continues(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    script.add(
        WHO,
        [
            bash("mkdir -p build/x && rm -rf build && echo removed"),
            report("done", "cleaned", message="清理好了"),
            Reply.text("ok"),
        ],
    )
    rule = await create(client)
    await run_now(client, rule["id"])

    async def asked() -> bool:
        return any(i["kind"] == "approval" for i in await attention(client))

    await wait_until(rules_host.bus, asked, what="the rule run's approval in needs-you")
    [item] = await attention(client)
    assert item["subject"] == "规则「X price」 · 等你批准" and "rm -rf build" in item["line"]
    assert item["ruleId"] == rule["id"] and set(item["actions"]) == {"approve", "deny"}
    [ask] = [m for m in await messages(client, rule["conversationId"]) if "rm -rf build" in m["text"]]
    assert "X price" in ask["text"]  # the ask, pushed like a task's
    assert ask["ruleId"] == rule["id"]  # and it names the rule that asks

    assert (await client.post(f"/api/attention/{item['id']}/approve")).status_code == 200
    log = await wait_ended(rules_host, client, rule["id"])
    assert log[0]["outcome"] == "done" and log[0]["said"] == "清理好了"
    assert "removed" in tool_results(script, WHO, 1)[-1]
    assert await attention(client) == []


async def test_an_acting_runs_approval_nobody_answers_in_an_hour_fails_the_run(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    script.add(WHO, [bash("rm -rf build"), report("done", "gave up", message="没删成"), Reply.text("ok")])
    rule = await create(client, schedule={"kind": "once", "at": "2030-06-01 08:00"})
    await run_now(client, rule["id"])

    async def asked() -> bool:
        return any(i["kind"] == "approval" for i in await attention(client))

    await wait_until(rules_host.bus, asked, what="the rule run's approval in needs-you")
    for _ in range(10_000):  # the approval's 1 h timer goes to sleep on the fake clock
        if clock.sleeping_for(3600):
            break
        await asyncio.sleep(0)
    clock.advance(3600)

    log = await wait_ended(rules_host, client, rule["id"])
    assert (log[0]["outcome"], log[0]["reason"], log[0]["said"]) == ("failed", "批准超时", "")
    assert "did not approve" in tool_results(script, WHO, 1)[-1]
    assert await attention(client) == []


async def test_an_observing_runs_approval_is_refused_at_once_and_recorded_on_the_run(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    script.add(WHO, [bash("rm -rf build"), report("done", "checked"), Reply.text("ok")])
    rule = await create(client, mode="observe")
    await run_now(client, rule["id"])
    log = await wait_ended(rules_host, client, rule["id"])
    if "bash" not in script.tool_names(WHO):
        pytest.skip("no OS sandbox here: observing runs get no shell, so nothing asks for approval")

    assert log[0]["outcome"] == "done" and log[0]["mode"] == "observe"
    assert "would need approval: recursive delete `rm -rf build`" in log[0]["report"]["would"]
    assert log[0]["line"].startswith("本会做:would need approval")
    assert "did not approve" in tool_results(script, WHO, 1)[-1]
    assert await attention(client) == []
    assert await rules_host.tasks.open_approvals() == []


# -- event triggers ---------------------------------------------------------------------------------


async def test_an_event_starts_a_run_of_each_matching_event_rule_and_of_no_other(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    trigger = {"kind": "event", "source": "github", "filter": {"repo": "a/b"}}
    matching = await create(client, trigger=trigger)
    assert matching["trigger"] == trigger and matching["nextRunAt"] == 0
    other = await create(client, title="Other repo", trigger={**trigger, "filter": {"repo": "c/d"}})
    scheduled = await create(client, title="Scheduled")
    bad = await client.post(
        "/api/rules",
        json={"title": "T", "instruction": WORDS, "schedule": DAILY_8, "trigger": {"kind": "event"}},
    )
    assert bad.status_code == 400 and "trigger.source" in json.dumps(bad.json())

    script.add(WHO, [report("done", "pushed", message="a/b 有新提交"), Reply.text("ok")])
    started = await rules_host.event_triggers.emit("github", {"repo": "a/b", "action": "push"})
    assert len(started) == 1
    log = await wait_ended(rules_host, client, matching["id"])
    assert [(e["id"], e["cause"], e["outcome"]) for e in log] == [(started[0], "event", "done")]
    assert await run_log(client, other["id"]) == [] and await run_log(client, scheduled["id"]) == []
    assert await rules_host.event_triggers.emit("gitlab", {"repo": "a/b"}) == []


async def test_a_rule_paused_by_a_rejected_key_says_why_in_the_language_of_its_instruction(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    rule = await create(client)
    for n in range(1, 4):
        script.add(WHO, [Reply.error(401)])
        await run_now(client, rule["id"])
        await wait_ended(rules_host, client, rule["id"], count=n)
    cid = rule["conversationId"]

    async def pushed() -> bool:
        return any("已暂停" in m["text"] for m in await messages(client, cid))

    await wait_until(rules_host.bus, pushed, what="the paused rule's push")
    [push] = [m["text"] for m in await messages(client, cid) if "已暂停" in m["text"]]
    assert "拒绝了 API Key" in push and "rejected the API key" not in push
    # The run keeps the English for the API.
    runs = (await client.get(f"/api/rules/{rule['id']}/runs")).json()["runs"]
    assert "rejected the API key" in runs[0]["reason"]
