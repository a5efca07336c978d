"""What every chat channel does, through the real host, the channel's real SDK or client and its fake
(docs/channels.md): a message is answered in the same conversation; the platform delivering it again
changes nothing; a send the platform refused is retried and reaches the person once; a task's question is
answered the channel's own way and the task goes on; pushes past the channel's daily cap wait, none sent
twice; credentials the platform refuses are said to be refused and nothing is kept. Each channel is driven
by its driver in `channel_drivers.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.channels.registry import capabilities_of
from core.host import Host
from core.store import deliveries as delivery_rows
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.channel_drivers import CHANNELS, Driver, driver_for
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, report
from tests.waiting import wait_until


async def _reached(host: Host, driver: Driver, words: str, *, timeout: float = 20) -> None:
    async def arrived() -> bool:
        return any(words in said for said in driver.delivered())

    await wait_until(host.bus, arrived, timeout=timeout, what=f"{words!r} on {driver.name}")


def _count(driver: Driver, words: str) -> int:
    return sum(words in said for said in driver.delivered())


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_message_is_answered_in_its_own_conversation_and_a_second_delivery_changes_nothing(
    channel: str, tmp_path: Path, model_server: ScriptedModelServer, home: Path, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("第一条回复。"), Reply.text("第二条回复。")])
    async with driver_for(channel) as driver:
        host = driver.host(tmp_path, model_server, home)
        async with running_api(host) as client:
            await driver.connect(client, host)
            await driver.owner_says("你好")
            await _reached(host, driver, "第一条回复。")
            conversations = (await client.get("/api/conversations")).json()["conversations"]
            assert [c["channel"] for c in conversations] == [channel]  # one conversation, on the channel

            await driver.deliver_again()
            await driver.owner_says("第二条")
            await _reached(host, driver, "第二条回复。")
            assert len(script.requests["chat"]) == 2  # the repeat started no turn
            assert _count(driver, "第一条回复。") == 1
            messages = (await client.get(f"/api/conversations/{conversations[0]['id']}/messages")).json()
            said = [m["text"] for m in messages["messages"] if m["role"] == "user"]
            assert said == ["你好", "第二条"]
        await host.stop()


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_send_the_platform_refused_is_retried_and_reaches_the_person_once(
    channel: str, tmp_path: Path, model_server: ScriptedModelServer, home: Path, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("重试后的回复。")])
    async with driver_for(channel) as driver:
        host = driver.host(tmp_path, model_server, home)
        async with running_api(host) as client:
            await driver.connect(client, host)
            driver.fail_next_send()
            await driver.owner_says("你好")
            await _reached(host, driver, "重试后的回复。", timeout=30)  # the outbox tries again after 5 s
            assert _count(driver, "重试后的回复。") == 1
            assert (await client.get("/api/attention")).json()["items"] == []
        await host.stop()


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_task_s_question_is_answered_the_channel_s_own_way_and_the_task_goes_on(
    channel: str, tmp_path: Path, model_server: ScriptedModelServer, home: Path, script: SessionScript
) -> None:
    title = "Compare GPU prices"
    start = ToolCallSpec("task_start", {"title": title, "brief": "比较三家云的 GPU 价格"})
    script.add("chat", [Reply.tool_calls([start]), Reply.text("好,后台开始调研。")])
    asked = report("needs_you", "basis", question="包月价还是按小时价?", options=["包月价", "按小时价"])
    script.add(title, [asked, Reply.text("等你的回答。")])
    async with driver_for(channel) as driver:
        host = driver.host(tmp_path, model_server, home)
        async with running_api(host) as client:
            await driver.connect(client, host)
            await driver.owner_says("帮我比较一下 GPU 价格")
            await _reached(host, driver, "包月价还是按小时价?")
            script.add(title, [report("done", "hourly", message="按小时价比较好了。")])
            await driver.choose("包月价还是按小时价?", "按小时价")
            await _reached(host, driver, "按小时价比较好了。")
            answered = [t for t in script.user_texts(title, -1) if "The user answered" in t]
            assert len(answered) == 1 and "按小时价" in answered[0]
            assert _count(driver, "按小时价比较好了。") == 1
            assert (await client.get("/api/attention")).json()["items"] == []
            assert len(script.requests["chat"]) == 2  # the answer went to the task, not to chat
        await host.stop()


@pytest.mark.parametrize("channel", CHANNELS)
async def test_pushes_past_the_channel_s_daily_cap_wait_for_tomorrow_and_none_is_sent_twice(
    channel: str, tmp_path: Path, model_server: ScriptedModelServer, home: Path, script: SessionScript
) -> None:
    cap = capabilities_of(channel).daily_cap
    assert cap is not None
    script.add("chat", [Reply.text("在。")])
    async with driver_for(channel) as driver:
        host = driver.host(tmp_path, model_server, home)
        async with running_api(host) as client:
            await driver.connect(client, host)
            await driver.owner_says("你好")  # its conversation (and on WeChat, the open window)
            await _reached(host, driver, "在。")
            [conversation] = (await client.get("/api/conversations")).json()["conversations"]
            bot = conversation["botId"]
            for n in range(cap + 1):
                await host.outbox.push(
                    delivery_id=f"t_{n}:result",
                    bot_id=bot,
                    conversation_id=conversation["id"],
                    purpose="result",
                    text=f"第 {n} 个结果",
                )
                await host.outbox.flush()
                await host.outbox.settled()
            await _reached(host, driver, f"第 {cap - 1} 个结果")
            assert [_count(driver, f"第 {n} 个结果") for n in range(cap + 1)] == [1] * cap + [0]
            held = await host.db.read(lambda s: delivery_rows.get_delivery(s, f"t_{cap}:result"))
            assert held is not None and (held.status, held.held_reason) == ("held", "daily_cap")
        await host.stop()


@pytest.mark.parametrize("channel", CHANNELS)
async def test_credentials_the_platform_refuses_say_why_and_keep_nothing(
    channel: str, tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    async with driver_for(channel) as driver:
        host = driver.host(tmp_path, model_server, home)
        async with running_api(host) as client:
            reason = await driver.connect_refused(client, host)
            assert reason.strip()  # said, not a bare failure
            assert driver.secrets() == {}  # no token, secret or pairing code kept
            chats = (await client.get("/api/conversations")).json()["conversations"]
            assert chats == []
        await host.stop()
