"""The Telegram exit demo through a real `errand serve` killed with SIGKILL mid-task: the paired owner asks
for research, a task starts and the ack is a reply under the request; after the restart the result arrives
under that request, once, and nothing said before the kill is answered again."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from tests.fakes.fake_telegram import FakeTelegram, SentMessage
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.task_script import SessionScript, bash, report
from tests.serve_process import (
    api_client,
    read_until_listening,
    recorded_on_platform,
    serve_env,
    serve_process,
)

pytestmark = pytest.mark.slow
OWNER = 4242
TITLE = "Research Y"
HELLO = "你好,我在。"
ACK = "好,后台开始调研 Y,好了告诉你。"
RESULT = "Y 调研好了:三家里 A 最便宜。"
GATE = "gate"
# Blocks the task until the test opens the gate: it is mid-task when serve is killed.
WAIT_AT_GATE = bash(f"while [ ! -f {GATE} ]; do sleep 0.05; done; echo researched")


def _with(telegram: FakeTelegram, words: str) -> list[SentMessage]:
    return [s for s in telegram.sent if words in s.text]


async def _sent_with(telegram: FakeTelegram, words: str, timeout: float = 30) -> SentMessage:
    """The first message with `words` that reached the fake, waiting for it if need be."""
    try:
        await telegram.wait_until(lambda: bool(_with(telegram, words)), timeout)
    except TimeoutError:
        raise TimeoutError(f"no Telegram message with {words!r}: {[s.text for s in telegram.sent]}") from None
    return _with(telegram, words)[0]


async def _telegram_conversation(client: httpx.AsyncClient) -> str:
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    [conversation] = [c["id"] for c in conversations if c["channel"] == "telegram"]
    return str(conversation)


async def test_a_task_started_from_telegram_survives_sigkill_and_its_result_comes_once_under_the_request(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, telegram: FakeTelegram
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
    # The token goes to a private file (no OS keyring here); pushes go at once, not after 2 minutes.
    env.update(ERRAND_TELEGRAM_BASE_URL=telegram.base_url, ERRAND_SECRETS="file", ERRAND_GATHER_S="0")

    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        async with api_client(data_dir) as client:
            bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
            # Whatever the hour here: no quiet hours, or the result would wait for the morning.
            r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
            assert r.status_code == 200, r.text
            body = {"kind": "telegram", "token": telegram.token}
            r = await client.post(f"/api/bots/{bot}/channels", json=body)
            assert r.status_code == 201, r.text
            telegram.user_says(chat_id=OWNER, user_id=OWNER, text=f"/start {r.json()['pairingCode']}")
            await _sent_with(telegram, "配对好了")

            telegram.user_says(chat_id=OWNER, user_id=OWNER, text="你好")
            await _sent_with(telegram, HELLO)
            request = telegram.user_says(chat_id=OWNER, user_id=OWNER, text="帮我调研一下 Y")
            ack = await _sent_with(telegram, "后台开始调研")
            assert (ack.chat_id, ack.reply_to) == (OWNER, request["message_id"])
            conversation = await _telegram_conversation(client)
            # The task asked the model and was told to wait at the gate: mid-task.
            await model_server.wait_until(lambda: len(script.requests[TITLE]) >= 1, timeout=20)
            [task] = (await client.get("/api/tasks")).json()["tasks"]
            folder = Path((await client.get(f"/api/tasks/{task['id']}")).json()["folder"])
            # Killed only once our side recorded the ack as sent, as a crash between the platform taking
            # a send and that record is another test's case.
            await recorded_on_platform(client, conversation, "后台开始调研")
        polls = len(telegram.get_updates_calls)
        proc.kill()
        await proc.wait()
    before_kill = len(telegram.sent)

    # The recover run picks the work up again: it too waits at the gate, then reports.
    script.add(TITLE, [WAIT_AT_GATE, report("done", "found", message=RESULT)])
    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        await telegram.wait_until(lambda: len(telegram.get_updates_calls) > polls, timeout=30)  # polling
        await asyncio.to_thread((folder / GATE).write_text, "go")
        result = await _sent_with(telegram, RESULT, timeout=40)
        async with api_client(data_dir) as client:
            # Stopped only once our side recorded it: a second copy would have gone before this.
            await recorded_on_platform(client, conversation, RESULT)
            detail = (await client.get(f"/api/tasks/{task['id']}")).json()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0

    assert (result.chat_id, result.reply_to) == (OWNER, request["message_id"])  # under the request
    assert len(_with(telegram, RESULT)) == 1, [s.text for s in telegram.sent]
    # Nothing said before the kill is answered a second time: the restart asks from the stored offset.
    assert [s.text for s in _with(telegram, "后台开始调研")] == [ACK]
    assert len(_with(telegram, HELLO)) == 1
    assert len(_with(telegram, "配对好了")) == 1
    assert [s.text for s in telegram.sent[before_kill:]] == [s.text for s in _with(telegram, RESULT)]
    assert [(r["cause"], r["outcome"]) for r in detail["runs"]] == [
        ("launch", "interrupted"),
        ("recover", "done"),
    ]
