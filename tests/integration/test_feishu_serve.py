"""The Feishu exit demo through a real `errand serve` killed with SIGKILL mid-task: in a group, an @-mention
asking for research starts a task; the ack is a reply under the request; after the restart the result card
arrives under that request, once."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from tests.fakes.fake_feishu import FakeFeishu, Sent, mention
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.feishu_fixtures import GROUP, OWNER, P2P, app_of, words_of
from tests.integration.task_script import SessionScript, bash, report
from tests.serve_process import (
    api_client,
    read_until_listening,
    recorded_on_platform,
    serve_env,
    serve_process,
)

pytestmark = pytest.mark.slow
TITLE = "Research Y"
ACK = "好,后台开始调研 Y,好了告诉你。"
RESULT = "Y 调研好了:三家里 A 最便宜。"
GATE = "gate"
# Blocks the task until the test opens the gate: it is mid-task when serve is killed.
WAIT_AT_GATE = bash(f"while [ ! -f {GATE} ]; do sleep 0.05; done; echo researched")


async def _sent_with(feishu: FakeFeishu, words: str, timeout: float = 30) -> Sent:
    """The first message with `words` that went out on the fake Feishu, waiting for it if need be."""
    async with asyncio.timeout(timeout):
        while True:
            found = [s for s in feishu.sent if words in words_of(s)]
            if found:
                return found[0]
            await feishu.wait_for_sent(len(feishu.sent) + 1, timeout=timeout)


async def _conversation_with(client: httpx.AsyncClient, words: str) -> str:
    """The Feishu conversation that holds a message with `words` (the group's, for the request)."""
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    for c in conversations:
        if c["channel"] != "feishu":
            continue
        messages = (await client.get(f"/api/conversations/{c['id']}/messages")).json()["messages"]
        if any(words in m["text"] for m in messages):
            return str(c["id"])
    raise AssertionError(f"no Feishu conversation holds {words!r}: {conversations}")


async def test_a_task_started_by_a_group_mention_survives_sigkill_and_its_card_comes_once_in_its_thread(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu
) -> None:
    script = SessionScript()
    model_server.responder = script
    script.add("chat", [Reply.text("你好,我在。")])  # the owner's first words, one-to-one
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("task_start", {"title": TITLE, "brief": "调研 Y,比较三家"})]),
            Reply.text(ACK),
        ],
    )
    script.add(TITLE, [WAIT_AT_GATE])
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    # The app secret goes to a private file (no OS keyring here); pushes go at once, not after 2 minutes.
    env.update(ERRAND_FEISHU_DOMAIN=feishu.url, ERRAND_SECRETS="file", ERRAND_GATHER_S="0")
    bot_mention = mention(open_id=feishu.bot_open_id, name=feishu.app_name)
    request = feishu.message_event(
        chat_id=GROUP, sender=OWNER, chat_type="group", text="@_user_1 帮我调研一下 Y", mentions=[bot_mention]
    )
    request_id = request["event"]["message"]["message_id"]

    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        async with api_client(data_dir) as client:
            bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
            # Whatever the hour here: no quiet hours, or the result would wait for the morning.
            r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
            assert r.status_code == 200, r.text
            r = await client.post(f"/api/bots/{bot}/channels", json=app_of(feishu))
            assert r.status_code == 201, r.text
            await feishu.wait_connected(1, timeout=30)  # the SDK is imported on first use: seconds

            hello = feishu.message_event(chat_id=P2P, sender=OWNER, text="你好")
            assert (await feishu.push(hello)).code == 200
            await _sent_with(feishu, "你好,我在。")  # answered: the owner is known

            assert (await feishu.push(request)).code == 200
            ack = await _sent_with(feishu, "后台开始调研")
            assert (ack.msg_type, ack.chat_id, ack.reply_to) == ("text", GROUP, request_id)
            group = await _conversation_with(client, "帮我调研一下 Y")
            # The task asked the model and was told to wait at the gate: mid-task.
            await model_server.wait_until(lambda: len(script.requests[TITLE]) >= 1, timeout=20)
            [task] = (await client.get("/api/tasks")).json()["tasks"]
            folder = Path((await client.get(f"/api/tasks/{task['id']}")).json()["folder"])
            # Killed only once our side recorded the ack as sent, as a crash between the platform taking
            # a send and that record is another test's case.
            await recorded_on_platform(client, group, "后台开始调研")
        connections = feishu.connections
        proc.kill()
        await proc.wait()

    # The recover run picks the work up again: it too waits at the gate, then reports.
    script.add(TITLE, [WAIT_AT_GATE, report("done", "found", message=RESULT)])
    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        await feishu.wait_connected(connections + 1, timeout=30)
        await asyncio.to_thread((folder / GATE).write_text, "go")
        card = await _sent_with(feishu, RESULT, timeout=40)
        async with api_client(data_dir) as client:
            # Stopped only once our side recorded it: a second copy would have gone before this.
            await recorded_on_platform(client, group, RESULT)
            detail = (await client.get(f"/api/tasks/{task['id']}")).json()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0

    assert card.msg_type == "interactive" and "回复这条消息可以继续问。" in words_of(card)
    assert card.chat_id == GROUP and card.reply_to == request_id  # in the request's thread
    assert len([s for s in feishu.sent if RESULT in words_of(s)]) == 1, [words_of(s) for s in feishu.sent]
    assert [words_of(s) for s in feishu.sent if "后台开始调研" in words_of(s)] == [ACK]  # the ack once too
    # Nothing said before the kill is answered a second time (the new connection's catch-up reads it again).
    assert len([s for s in feishu.sent if "你好,我在。" in words_of(s)]) == 1
    assert [(r["cause"], r["outcome"]) for r in detail["runs"]] == [
        ("launch", "interrupted"),
        ("recover", "done"),
    ]
