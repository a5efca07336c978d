"""A bot's memory end to end: kept with `remember` in one conversation and read by the next session and by
tasks, changed and deleted by the person through the API with 撤销, refused with a needs-you row when
full. A real host, the scripted model over HTTP (docs/memory.md)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from core.host import Host
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, report
from tests.integration.test_chat_api import new_conversation, wait_for_roles
from tests.integration.test_skills import bot_id, system_text, tool_names, tool_result
from tests.integration.test_tasks import new_task, wait_stage

pytestmark = pytest.mark.slow

ENGLISH = "The user wants replies in English."


def remember(text: str) -> Reply:
    return Reply.tool_calls([ToolCallSpec("remember", {"text": text})])


async def memory(client: httpx.AsyncClient, bot: str) -> dict[str, Any]:
    r = await client.get(f"/api/bots/{bot}/memory")
    assert r.status_code == 200, r.text
    return dict(r.json())


async def chat_once(host: Host, client: httpx.AsyncClient, cid: str, text: str, turns: int) -> None:
    await client.post(f"/api/conversations/{cid}/messages", json={"text": text})
    await wait_for_roles(host, client, cid, ["user", "assistant"] * turns)


async def test_a_note_kept_in_one_conversation_is_known_to_the_next_and_to_a_task(
    host: Host, script: SessionScript
) -> None:
    script.add("chat", [remember(f"  {ENGLISH}\n"), Reply.text("Noted."), Reply.text("Hello again.")])
    script.add("Weekly digest", [report("done", "Wrote it.", message="Digest written.")])
    async with running_api(host) as client:
        bot = await bot_id(client)
        first = await new_conversation(client)
        await chat_once(host, client, first, "From now on, answer in English.", 1)
        assert "Remembered as m_" in tool_result(script.requests["chat"][1])
        [note] = (await memory(client, bot))["entries"]
        assert note["text"] == ENGLISH and note["editedBy"] == "bot"
        assert note["source"]["kind"] == "conversation" and note["source"]["id"] == first

        second = await new_conversation(client)
        await chat_once(host, client, second, "hi", 1)
        asked = script.requests["chat"][2]
        assert f"- [{note['id']}] {ENGLISH}" in system_text(asked)
        assert {"remember", "forget"} <= set(tool_names(asked))

        task = await new_task(client, "Weekly digest")
        await wait_stage(host, client, task["id"], "ready")
        assert f"- [{note['id']}] {ENGLISH}" in system_text(script.requests["Weekly digest"][0])


async def test_the_person_edits_deletes_and_undoes_and_the_bot_reads_what_stands(
    host: Host, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("One."), Reply.text("Two."), Reply.text("Three.")])
    async with running_api(host) as client:
        bot = await bot_id(client)
        url = f"/api/bots/{bot}/memory"
        added = await client.post(url, json={"text": "Invoices go to finance on Fridays."})
        assert added.status_code == 201, added.text
        note = added.json()
        assert note["source"]["kind"] == "person" and note["editedBy"] == "person"
        again = await client.post(url, json={"text": "Invoices go to  finance on Fridays."})
        assert again.json()["id"] == note["id"]  # the same words are one note

        edited = await client.put(f"{url}/{note['id']}", json={"text": "Invoices go to finance on Mondays."})
        assert edited.status_code == 200 and edited.json()["text"] == "Invoices go to finance on Mondays."
        cid = await new_conversation(client)
        await chat_once(host, client, cid, "hi", 1)
        assert "on Mondays." in system_text(script.requests["chat"][0])

        gone = await client.delete(f"{url}/{note['id']}")
        assert gone.status_code == 200 and gone.json()["text"] == "Invoices go to finance on Mondays."
        assert (await memory(client, bot))["entries"] == []
        assert (await client.delete(f"{url}/{note['id']}")).status_code == 404
        await chat_once(host, client, cid, "still there?", 2)
        assert "Invoices" not in system_text(script.requests["chat"][1])

        undone = await client.put(f"{url}/{note['id']}", json={"text": gone.json()["text"]})  # 撤销
        assert undone.status_code == 200 and undone.json()["id"] == note["id"]
        [back] = (await memory(client, bot))["entries"]
        assert back["text"] == "Invoices go to finance on Mondays." and back["createdAt"] == note["createdAt"]
        await chat_once(host, client, cid, "and now?", 3)
        assert "on Mondays." in system_text(script.requests["chat"][2])

        for body, status, said in [
            ({"text": ""}, 400, "text: is empty"),
            ({"text": "x" * 501}, 400, "more than 500"),
            ({"text": "ok", "pinned": True}, 400, "pinned"),
            ({"text": 3}, 400, "must be a string"),
        ]:
            r = await client.put(f"{url}/{note['id']}", json=body)
            assert r.status_code == status and said in r.json()["error"]["message"], r.text
        assert (await memory(client, bot))["entries"] == [back]
        assert (await client.put(f"{url}/m_000000000000", json={"text": "x"})).status_code == 404


async def test_a_full_notebook_refuses_the_note_tells_the_model_and_the_person_until_room_is_made(
    host: Host, script: SessionScript, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("core.memory.notebook.MAX_ENTRIES", 2)
    script.add(
        "chat",
        [
            remember("Third fact."),
            Reply.text("Could not keep it."),
            remember("Third fact."),
            Reply.text("Kept."),
        ],
    )
    async with running_api(host) as client:
        bot = await bot_id(client)
        url = f"/api/bots/{bot}/memory"
        for text in ("First fact.", "Second fact."):
            assert (await client.post(url, json={"text": text})).status_code == 201
        full = await client.post(url, json={"text": "Extra."})
        assert full.status_code == 409 and "full" in full.json()["error"]["message"]

        cid = await new_conversation(client)
        await chat_once(host, client, cid, "remember the third fact", 1)
        said = tool_result(script.requests["chat"][1])
        assert "Not kept: the memory is full (2 of 2 notes" in said and "The user has been told" in said
        view = await memory(client, bot)
        assert len(view["entries"]) == 2 and view["fullSince"] is not None
        [row] = [
            i for i in (await client.get("/api/attention")).json()["items"] if i["kind"] == "memory_full"
        ]
        assert row["botId"] == bot and row["actions"] == ["open", "dismiss"]

        assert (await client.post(f"/api/attention/{row['id']}/dismiss", json={})).status_code == 200
        assert not [
            i for i in (await client.get("/api/attention")).json()["items"] if i["kind"] == "memory_full"
        ]

        await client.delete(f"{url}/{view['entries'][0]['id']}")  # room made: the bot can keep it now
        await chat_once(host, client, cid, "try again", 2)
        assert "Remembered as m_" in tool_result(script.requests["chat"][3])
        assert [e["text"] for e in (await memory(client, bot))["entries"]] == ["Second fact.", "Third fact."]


async def test_a_secret_or_an_unknown_id_is_refused_to_the_model_and_nothing_changes(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "chat",
        [
            remember("The deploy key is " + "sk-" + "live-0123456789abcdefghij"),
            Reply.tool_calls([ToolCallSpec("forget", {"id": "m_000000000000"})]),
            Reply.text("Done."),
        ],
    )
    async with running_api(host) as client:
        bot = await bot_id(client)
        cid = await new_conversation(client)
        await chat_once(host, client, cid, "keep my key", 1)
        assert "Never keep secrets in memory" in tool_result(script.requests["chat"][1])
        assert "no note 'm_000000000000'" in tool_result(script.requests["chat"][2])
        assert (await memory(client, bot))["entries"] == []
