"""A task started from WeChat survives a SIGKILL of a real `errand serve`: chat in that WeChat conversation
goes on while the task works, and after the restart the result arrives once, in the same WeChat chat,
with the peer's latest reply token."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.fakes.fake_ilink import FakeILink, Sent
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.task_script import SessionScript, bash, report
from tests.serve_process import read_until_listening, serve_env, serve_process

pytestmark = pytest.mark.slow
TITLE = "Research Y"
RESULT = "Y 调研好了:三家里 A 最便宜。"


def _api(data_dir: Path) -> httpx.AsyncClient:
    info = json.loads((data_dir / "api.json").read_text())
    headers = {"Authorization": f"Bearer {info['token']}"}
    return httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=15)


def _with(words: str) -> Callable[[list[Sent]], bool]:
    return lambda sent: any(words in s.message.text for s in sent)


async def _recorded_on_platform(client: httpx.AsyncClient, words: str) -> None:
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    [wechat] = [c for c in conversations if c["channel"] == "wechat"]
    url = f"/api/conversations/{wechat['id']}/messages"
    last = 0
    async with asyncio.timeout(15):
        while True:  # the API's long poll: each answer comes when the conversation changed
            found = (await client.get(url, params={"after": last, "wait": 5})).json()["messages"]
            if any(
                words in m["text"] and m["onPlatform"] for m in (await client.get(url)).json()["messages"]
            ):
                return
            last = found[-1]["id"] if found else last


def _texts(sent: list[Sent]) -> list[str]:
    return [s.message.text for s in sent]


async def test_a_task_started_from_wechat_survives_sigkill_and_its_result_arrives_once_on_wechat(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    script = SessionScript()
    model_server.responder = script
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("task_start", {"title": TITLE, "brief": "调研 Y,比较三家"})]),
            Reply.text("好,后台开始调研 Y,好了告诉你。"),
            Reply.text("今天晴。"),
        ],
    )
    script.add(TITLE, [bash("echo step > step.txt"), Reply.hang()])
    ilink.qr_script = ["confirmed"]
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    # The token goes to a private file (no OS keyring here); pushes go at once, not after 2 minutes.
    env.update(ERRAND_WECHAT_BASE_URL=ilink.base_url, ERRAND_SECRETS="file", ERRAND_GATHER_S="0")
    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        async with _api(data_dir) as client:
            bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
            # Whatever the hour here: no quiet hours, or the result would wait for the morning.
            r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
            assert r.status_code == 200, r.text
            r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "wechat"})
            assert r.status_code == 201, r.text
            await ilink.wait_for_polls(1, timeout=15)
            ilink.user_says("帮我调研一下 Y")
            await ilink.wait_for_sent(_with("后台开始调研"), timeout=20)
            await model_server.wait_until(lambda: len(script.requests[TITLE]) >= 2, timeout=20)
            ilink.user_says("今天天气怎么样")  # chat goes on while the task works
            await ilink.wait_for_sent(_with("今天晴"), timeout=20)
            # Killed only once our side has recorded the reply as sent: a kill between the platform
            # taking it and that record leaves it "unsure" instead (another test shows that case).
            await _recorded_on_platform(client, "今天晴")
        proc.kill()  # mid-task: its second model request never answers
        await proc.wait()

    script.add(TITLE, [report("done", "found", message=RESULT)])
    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        await ilink.wait_for_sent(_with(RESULT), timeout=30)
        async with _api(data_dir) as client:
            # Stopped only once our side recorded it: a second copy would have gone before this.
            await _recorded_on_platform(client, RESULT)
            [task] = (await client.get("/api/tasks")).json()["tasks"]
            detail = (await client.get(f"/api/tasks/{task['id']}")).json()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0

    results = [s for s in ilink.sent if RESULT in s.message.text]
    assert len(results) == 1, _texts(ilink.sent)  # once, however the restart went
    assert results[0].message.to_user == ilink.owner_id
    assert results[0].message.context_token == ilink.log[-1]["context_token"]  # the peer's latest token
    assert results[0].message.text.endswith("引用这条消息可以继续问。")
    assert [t for t in _texts(ilink.sent) if "后台开始调研" in t] == ["好,后台开始调研 Y,好了告诉你。"]
    assert [(r["cause"], r["outcome"]) for r in detail["runs"]] == [
        ("launch", "interrupted"),
        ("recover", "done"),
    ]
