"""What a WeChat conversation gets, through the real host and outbox against the fake iLink server: chat
replies reach the peer with its latest token and are remembered by the platform's id; a result that finds
the reply window closed waits in needs-you and goes out first, as 「你不在时:…」, when the person writes
again; a send cut off by a crash is never sent again by itself."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from core.clock import FakeClock
from core.delivery.outbox import local_zone
from core.store import deliveries as delivery_rows
from core.store import messages as msg_rows
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import running_api
from tests.integration.wechat_fixtures import (
    connect_wechat,
    wechat_conversations,
    wechat_host,
    wechat_messages,
)
from tests.waiting import wait_until


def local(day: int, hour: int, minute: int = 0) -> float:
    return datetime(2026, 11, day, hour, minute, tzinfo=ZoneInfo(local_zone())).timestamp()


async def test_a_reply_reaches_the_peer_with_its_latest_token_and_is_known_by_its_wechat_id(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    model_server.default_text = "**Hi** from the bot."
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        await connect_wechat(client, host)
        said = ilink.user_says("hello bot")

        async def replied() -> bool:
            return len(ilink.sent) == 1 and any(
                m["role"] == "assistant" for m in await wechat_messages(client)
            )

        await wait_until(host.bus, replied, timeout=10, what="the reply sent on WeChat")
        [sent] = ilink.sent
        assert sent.message.to_user == ilink.owner_id
        assert sent.message.context_token == said["context_token"]
        assert sent.message.text == "Hi from the bot."  # Markdown flattened for WeChat
        [conversation] = await wechat_conversations(client)
        stored = await host.db.read(
            lambda s: msg_rows.find_by_channel_ref(s, conversation["id"], sent.message_id)
        )
        assert stored is not None and stored.role == "assistant"  # a quote of it will find it
        assert (await client.get("/api/attention")).json()["items"] == []
    await host.stop()


async def test_a_result_held_by_the_closed_window_goes_first_when_the_person_writes_again(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    clock = FakeClock(start=local(20, 8, 30))
    ilink._now = clock.time  # the platform's 24 h window runs on the same fake time
    ilink.qr_script = ["confirmed"]  # no wait between status polls, which would sleep on the fake clock
    model_server.default_text = "Morning."
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore(), clock=clock)
    async with running_api(host) as client:
        bot, _ = await connect_wechat(client, host)
        ilink.user_says("hello")
        await wait_until(host.bus, lambda: _sent_count(ilink, 1), timeout=10, what="the first reply")
        [conversation] = await wechat_conversations(client)

        clock.advance(local(20, 23) - clock.time())  # the result is ready late in the evening
        await host.outbox.push(
            delivery_id="t_report:result",
            bot_id=bot,
            conversation_id=conversation["id"],
            purpose="result",
            text="「调研 Y」完成:报告写好了",
        )
        assert len(ilink.sent) == 1  # quiet hours: it waits

        clock.advance(local(21, 8, 5) - clock.time())  # morning: quiet hours are over, the window is not open
        await host.outbox.flush()

        async def waiting_in_needs_you() -> bool:
            items = (await client.get("/api/attention")).json()["items"]
            return [i["subject"] for i in items] == ["1 条结果等你在微信里发条消息才能送达"]

        await wait_until(host.bus, waiting_in_needs_you, timeout=5, what="the held result in needs-you")
        assert len(ilink.sent) == 1

        ilink.user_says("早")
        await wait_until(
            host.bus, lambda: _sent_count(ilink, 3), timeout=10, what="the result, then the reply"
        )
        away, reply = ilink.sent[1].message.text, ilink.sent[2].message.text
        assert away.startswith("你不在时:「调研 Y」完成:报告写好了")
        assert away.endswith("引用这条消息可以继续问。")
        assert reply == "Morning."
        assert (await client.get("/api/attention")).json()["items"] == []
    await host.stop()


async def test_a_send_cut_off_by_a_crash_is_unsure_and_goes_again_only_when_the_person_says(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    secrets = MemorySecretStore()
    model_server.default_text = "ok"
    host = wechat_host(tmp_path, model_server, home, ilink, secrets)
    async with running_api(host) as client:
        bot, _ = await connect_wechat(client, host)
        ilink.user_says("hello")
        await wait_until(host.bus, lambda: _sent_count(ilink, 1), timeout=10, what="the first reply")
        [conversation] = await wechat_conversations(client)
        now = host.clock.time()

        def sending(s: Session) -> None:  # what a crash in the middle of a send leaves behind
            delivery_rows.insert_delivery(
                s,
                id="t_x:result",
                bot_id=bot,
                conversation_id=conversation["id"],
                purpose="result",
                text="报告写好了",
                now=now,
            )
            delivery_rows.set_delivery_status(s, "t_x:result", "sending")

        await host.db.write(sending)
    await host.stop()

    again = wechat_host(tmp_path, model_server, home, ilink, secrets)
    async with running_api(again) as client:
        # Whatever the hour on this machine: no quiet hours for this bot.
        r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
        assert r.status_code == 200, r.text
        [item] = (await client.get("/api/attention")).json()["items"]
        assert (item["kind"], item["subject"], item["actions"]) == (
            "unsure_delivery",
            "不确定送达微信",
            ["retry", "dismiss"],
        )
        assert "报告写好了" in item["line"]
        await again.outbox.flush()
        assert len(ilink.sent) == 1  # never sent again by itself

        r = await client.post(f"/api/attention/{item['id']}/retry", json={})
        assert r.status_code == 200, r.text
        await wait_until(again.bus, lambda: _sent_count(ilink, 2), timeout=10, what="sent again on request")
        assert ilink.sent[1].message.text.startswith("报告写好了")
        assert (await client.get("/api/attention")).json()["items"] == []
    await again.stop()


async def _sent_count(ilink: FakeILink, n: int) -> bool:
    return len(ilink.sent) >= n
