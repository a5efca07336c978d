"""The DingTalk exit demo through a real `errand serve` killed with SIGKILL mid-task: the owner asks for
research in a one-to-one chat, a task starts and the ack is sent; after the restart the stream connects
again and the result arrives once, read back before it counts, and nothing said before the kill is
answered again."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from tests.fakes.fake_dingtalk import FakeDingTalk
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.dingtalk_fixtures import OWNER, app_of, count, sent_with
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
HELLO = "你好,我在。"
ACK = "好,后台开始调研 Y,好了告诉你。"
RESULT = "Y 调研好了:三家里 A 最便宜。"
GATE = "gate"
# Blocks the task until the test opens the gate: it is mid-task when serve is killed.
WAIT_AT_GATE = bash(f"while [ ! -f {GATE} ]; do sleep 0.05; done; echo researched")


async def _dingtalk_conversation(client: httpx.AsyncClient) -> str:
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    [conversation] = [c["id"] for c in conversations if c["channel"] == "dingtalk"]
    return str(conversation)


async def test_a_task_started_from_dingtalk_survives_sigkill_and_its_result_comes_once(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, dingtalk: FakeDingTalk
) -> None:
    script = SessionScript()
    model_server.responder = script
    script.add("chat", [Reply.text(HELLO)])
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
    # The secret goes to a private file (no OS keyring here); pushes go at once, not after 2 minutes.
    env.update(ERRAND_DINGTALK_ENDPOINT=dingtalk.endpoint, ERRAND_SECRETS="file", ERRAND_GATHER_S="0")

    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        async with api_client(data_dir) as client:
            bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
            # Whatever the hour here: no quiet hours, or the result would wait for the morning.
            r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
            assert r.status_code == 200, r.text
            r = await client.post(f"/api/bots/{bot}/channels", json=app_of(dingtalk))
            assert r.status_code == 201, r.text
            await dingtalk.wait_connected(timeout=20)

            await dingtalk.user_says("你好", staff_id=OWNER)
            await sent_with(dingtalk, HELLO, timeout=30)
            await dingtalk.user_says("帮我调研一下 Y", staff_id=OWNER)
            await sent_with(dingtalk, "后台开始调研", timeout=30)
            conversation = await _dingtalk_conversation(client)
            # The task asked the model and was told to wait at the gate: mid-task.
            await model_server.wait_until(lambda: len(script.requests[TITLE]) >= 1, timeout=20)
            [task] = (await client.get("/api/tasks")).json()["tasks"]
            folder = Path((await client.get(f"/api/tasks/{task['id']}")).json()["folder"])
            await recorded_on_platform(client, conversation, "后台开始调研")
        connects = dingtalk.connects
        proc.kill()
        await proc.wait()
    before_kill = len(dingtalk.sent)

    # The recover run picks the work up again: it too waits at the gate, then reports.
    script.add(TITLE, [WAIT_AT_GATE, report("done", "found", message=RESULT)])
    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        await dingtalk.wait_connected(connects + 1, timeout=30)  # the stream is back
        await asyncio.to_thread((folder / GATE).write_text, "go")
        await sent_with(dingtalk, RESULT, timeout=40)
        async with api_client(data_dir) as client:
            # Stopped only once our side recorded it: a second copy would have gone before this.
            await recorded_on_platform(client, conversation, RESULT)
            detail = (await client.get(f"/api/tasks/{task['id']}")).json()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0

    assert count(dingtalk, RESULT) == 1, [s.text for s in dingtalk.sent]
    assert count(dingtalk, "后台开始调研") == 1 and count(dingtalk, HELLO) == 1
    [after] = dingtalk.sent[before_kill:]  # only the result went after the restart
    assert after.text.startswith(RESULT)
    assert [(r["cause"], r["outcome"]) for r in detail["runs"]] == [
        ("launch", "interrupted"),
        ("recover", "done"),
    ]
