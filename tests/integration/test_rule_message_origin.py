"""A rule's pushed message names the rule that sent it, and a reply that created a rule carries its chip
(docs/desktop.md#chat-view). The real host on a fake clock, a real SQLite file and the scripted model."""

from __future__ import annotations

from typing import Any

import httpx

from core.host import Host
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.rule_api import DAILY_8, messages, run_now, wait_ended
from tests.integration.task_script import SessionScript, report
from tests.waiting import wait_until

TITLE = "X price"
WHO = f"rule:{TITLE}"
SAID = "X 降价了,现在 ¥199"


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    fields = {"title": TITLE, "instruction": "看看 X 的价格,低于 200 告诉我", "schedule": DAILY_8, **body}
    r = await client.post("/api/rules", json=fields)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def arrived(host: Host, client: httpx.AsyncClient, cid: str, text: str) -> dict[str, Any]:
    async def there() -> bool:
        return any(m["text"] == text for m in await messages(client, cid))

    await wait_until(host.bus, there, timeout=10, what=f"the message {text!r}")
    return next(m for m in await messages(client, cid) if m["text"] == text)


async def test_an_acting_checks_message_names_its_rule_through_the_chat_facade_and_the_api(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    script.add(WHO, [report("done", "price is 199", message=SAID), Reply.text("Reported.")])
    rule = await create(client)
    await run_now(client, rule["id"])
    await wait_ended(rules_host, client, rule["id"])

    pushed = await arrived(rules_host, client, rule["conversationId"], SAID)
    assert (pushed["ruleId"], pushed["ruleTitle"], pushed["taskId"]) == (rule["id"], TITLE, "")
    [view] = [m for m in await rules_host.chat.list_messages(rule["conversationId"]) if m.text == SAID]
    assert (view.rule_id, view.rule_title) == (rule["id"], TITLE)


async def test_a_reminder_names_its_rule_and_a_deleted_rule_keeps_its_id_without_a_title(
    rules_host: Host, client: httpx.AsyncClient
) -> None:
    rule = await create(client, kind="remind", title="Meeting", instruction="下午 3 点开会")
    await run_now(client, rule["id"])
    pushed = await arrived(rules_host, client, rule["conversationId"], "下午 3 点开会")
    assert (pushed["ruleId"], pushed["ruleTitle"]) == (rule["id"], "Meeting")

    assert (await client.delete(f"/api/rules/{rule['id']}")).status_code in (200, 204)
    kept = next(m for m in await messages(client, rule["conversationId"]) if m["id"] == pushed["id"])
    assert (kept["ruleId"], kept["ruleTitle"]) == (rule["id"], "")


async def test_a_tasks_result_names_no_rule(host: Host, script: SessionScript) -> None:
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("task_start", {"title": "Tidy", "brief": "Sort the files."})]),
            Reply.text("好,后台开始整理。"),
        ],
    )
    script.add("Tidy", [report("done", "sorted", message="整理好了。")])
    async with running_api(host) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "帮我整理一下下载目录"})
        result = await arrived(host, client, cid, "整理好了。")
        assert result["taskId"] and (result["ruleId"], result["ruleTitle"], result["rules"]) == ("", "", [])


async def test_a_reply_that_created_a_rule_carries_its_chip_until_the_rule_is_deleted(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    confirmation = "已建好规则:每天 08:00 看 X 价格,有值得说的就告诉你。"
    words = "每天早上 8 点看看 X 的价格,低于 200 告诉我"
    args = {"title": "看 X 价格", "instruction": words, "schedule": DAILY_8}
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("rule_create", args)]),
            Reply.text(confirmation),
        ],
    )
    cid = (await client.post("/api/conversations", json={})).json()["id"]
    await client.post(f"/api/conversations/{cid}/messages", json={"text": words})
    reply = await arrived(rules_host, client, cid, confirmation)

    [rule] = (await client.get("/api/rules")).json()["rules"]
    assert reply["rules"] == [{"ruleId": rule["id"], "title": "看 X 价格", "mode": "act", "paused": False}]
    assert reply["ruleId"] == ""  # it created the rule; no rule sent it
    [view] = [m for m in await rules_host.chat.list_messages(cid) if m.text == confirmation]
    assert [c.rule_id for c in view.rule_chips] == [rule["id"]]

    assert (await client.delete(f"/api/rules/{rule['id']}")).status_code in (200, 204)
    again = next(m for m in await messages(client, cid) if m["id"] == reply["id"])
    assert again["rules"] == []
