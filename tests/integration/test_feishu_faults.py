"""Bad input and faults on a Feishu channel, through the real host and lark-oapi against the fake Feishu:
frames we cannot read are acked and skipped while the next message is still answered; a card press we
cannot act on gets a toast saying so; rate limits, server errors and a lost answer are retried and the
person gets one message; no history permission is said once; a connection that stopped delivering is
reported and made again."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from sqlalchemy.orm import Session

from core.channels.feishu.sender import send_uuid
from core.host import Host
from core.store import deliveries as delivery_rows
from core.store.models import InboundRow
from tests.fakes.fake_feishu import FakeFeishu
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.integration.feishu_fixtures import (
    OWNER,
    P2P,
    buttons_of,
    channel,
    connect_feishu,
    feishu_host,
    sent_with,
    wait_connected,
    words_of,
)
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, report
from tests.waiting import wait_until

TITLE = "Compare GPU prices"


async def _stored(host: Host) -> int:
    def count(s: Session) -> int:
        return s.query(InboundRow).count()

    return await host.db.read(count)


async def _owner_says_hi(host: Host, feishu: FakeFeishu, reply: str) -> None:
    await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="你好"))
    await sent_with(host, feishu, reply, timeout=30)


async def test_frames_we_cannot_read_are_acked_and_skipped_and_the_next_message_is_answered(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("收到。")
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        good = feishu.message_event(chat_id=P2P, sender=OWNER, text="你好")
        not_json = feishu.message_event(chat_id=P2P, sender=OWNER, text="x")
        not_json["event"]["message"]["content"] = "{not json"
        no_id = feishu.message_event(chat_id=P2P, sender=OWNER, text="x")
        del no_id["event"]["message"]["message_id"]
        unknown = {
            "schema": "2.0",
            "header": {"event_id": "e1", "event_type": "im.chat.updated_v1"},
            "event": {},
        }
        for bad in (not_json, no_id, unknown, {"schema": "1.0"}):
            ack = await feishu.push(bad)
            assert ack.code == 200  # acked: Feishu would push it again and again
        assert await _stored(host) == 0
        ack = await feishu.push(good, chunks=3)  # one event cut into three frames
        assert ack.code == 200
        reply = await sent_with(host, feishu, "收到。")
        assert reply.reply_to == good["event"]["message"]["message_id"]
        assert await _stored(host) == 1
    await host.stop()


async def test_a_press_on_something_gone_or_unreadable_says_so_in_its_toast(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("好的。")])
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("task_start", {"title": TITLE, "brief": "比较 GPU 价格"})]),
            Reply.text("后台开始了。"),
        ],
    )
    script.add(TITLE, [report("done", "compared", message="X 云最便宜。")])
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        await _owner_says_hi(host, feishu, "好的。")
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="比较 GPU 价格"))
        card = await sent_with(host, feishu, "X 云最便宜")
        buttons = dict(buttons_of(card))

        odd = feishu.card_action_event(
            operator=OWNER, message_id=card.message_id, chat_id=P2P, value={"a": "explode"}
        )
        ack = await feishu.push(odd)
        assert ack.data is not None and ack.data["toast"]["type"] == "error"

        stranger = feishu.card_action_event(
            operator="ou_someone_else_000000000000000001",
            message_id=card.message_id,
            chat_id=P2P,
            value=buttons["详情"],
        )
        ack = await feishu.push(stranger, frame_type="card")  # a press may come as a card frame too
        assert ack.data is not None and "主人" in ack.data["toast"]["content"]

        detail = feishu.card_action_event(
            operator=OWNER, message_id=card.message_id, chat_id=P2P, value=buttons["详情"]
        )
        ack = await feishu.push(detail)
        assert ack.data is not None and ack.data["toast"]["content"] == "详情发在下面了"
        shown = await sent_with(host, feishu, "compared")
        assert shown.reply_to == card.message_id

        [task] = (await client.get("/api/tasks")).json()["tasks"]
        assert (await client.delete(f"/api/tasks/{task['id']}")).status_code in (200, 204)
        retry = feishu.card_action_event(
            operator=OWNER,
            message_id=card.message_id,
            chat_id=P2P,
            value={"a": "retry", "item": f"task_failed:{task['id']}", "task": task["id"]},
        )
        ack = await feishu.push(retry)
        assert ack.data is not None and ack.data["toast"]["content"] == "这件事已经结束了"
        [patch] = await feishu.wait_for_patches(1)  # and the card says so, without its buttons
        assert "这件事已经结束了" in json.dumps(patch.content, ensure_ascii=False)
        assert '"button"' not in json.dumps(patch.content)
    await host.stop()


async def test_rate_limits_errors_and_a_lost_answer_are_retried_and_the_person_gets_one_message(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("第一条回复。"), Reply.text("第二条回复。")])
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        feishu.fail_sends(1, code=230020)  # rate limited: tried again after the outbox's 5 s
        await _owner_says_hi(host, feishu, "第一条回复。")
        assert len([s for s in feishu.sent if "第一条回复" in words_of(s)]) == 1

        feishu.fail_sends(1, status=500)  # a server error page, then an answer that never comes back:
        feishu.lose_answer(1)  # sent again each time under the same uuid
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="再来"))
        conversation = (await client.get("/api/conversations")).json()["conversations"][0]["id"]

        async def on_platform() -> bool:
            messages = (await client.get(f"/api/conversations/{conversation}/messages")).json()["messages"]
            return any(m["text"] == "第二条回复。" and m["onPlatform"] for m in messages)

        await wait_until(host.bus, on_platform, timeout=30, what="the second reply confirmed")
        assert len([s for s in feishu.sent if "第二条回复" in words_of(s)]) == 1
        assert (await client.get("/api/attention")).json()[
            "items"
        ] == []  # nothing for the person to sort out
    await host.stop()


async def test_no_history_permission_is_said_once_and_a_silent_connection_is_reported_and_made_again(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("在。")
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        bot, channel_id = await connect_feishu(client, host, feishu)
        five_minutes_ago = int(feishu._now() * 1000) - 300_000
        await feishu.push(
            feishu.message_event(chat_id=P2P, sender=OWNER, text="你好", create_time_ms=five_minutes_ago)
        )
        await sent_with(host, feishu, "在。")
        receiver = host.channels.feishu_receiver(channel_id)
        assert receiver is not None

        feishu.history_forbidden = True
        await receiver.catch_up()
        shown = await channel(client, bot, channel_id)
        assert shown["status"] == "connected" and "history" in shown["reason"]

        feishu.history_forbidden = False
        connections = feishu.connections
        # Written while the socket was up, a while ago, and never delivered through it.
        sent_ms = int(feishu._now() * 1000) - 120_000
        feishu.say_while_offline(chat_id=P2P, sender=OWNER, text="没送到的那条", create_time_ms=sent_ms)
        receiver._connected_at = five_minutes_ago / 1000 - 60  # the socket had been up since before both
        assert not await receiver.check_health()
        shown = await channel(client, bot, channel_id)
        assert shown["status"] == "unhealthy" and "catch-up" in shown["reason"]
        await feishu.wait_connected(connections + 1, timeout=15)  # made again
        await feishu.wait_for_sent(2, timeout=15)  # and what it missed is answered
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="现在呢"))
        await wait_connected(client, host, bot, channel_id)  # delivering again: healthy
        assert any("没送到的那条" in t for t in script.user_texts("chat", -1))
    await host.stop()


async def test_a_stale_message_is_answered_with_its_age(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("好的。")
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        two_hours_ago = int(feishu._now() * 1000) - 2 * 3600 * 1000 - 5000
        await feishu.push(
            feishu.message_event(chat_id=P2P, sender=OWNER, text="帮我整理周报", create_time_ms=two_hours_ago)
        )
        age = await sent_with(host, feishu, "前发的")
        assert words_of(age) == "这条是 2 小时前发的,现在开始做。"
        await sent_with(host, feishu, "好的。")
    await host.stop()


async def test_a_send_cut_off_by_a_crash_goes_again_by_itself_and_the_person_gets_it_once(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("在。")
    secrets = MemorySecretStore()
    host = feishu_host(tmp_path, model_server, home, feishu, secrets)
    async with running_api(host) as client:
        bot, channel_id = await connect_feishu(client, host, feishu)
        await _owner_says_hi(host, feishu, "在。")
        [conversation] = (await client.get("/api/conversations")).json()["conversations"]
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
    # The platform had taken it before the crash, under the key the send carries.
    async with httpx.AsyncClient(base_url=feishu.url) as raw:
        token = (
            await raw.post(
                "/open-apis/auth/v3/tenant_access_token/internal",
                json={"app_id": feishu.app_id, "app_secret": feishu.app_secret},
            )
        ).json()["tenant_access_token"]
        body = {"receive_id": P2P, "msg_type": "text", "content": json.dumps({"text": "报告写好了"})}
        r = await raw.post(
            "/open-apis/im/v1/messages",
            params={"receive_id_type": "chat_id"},
            json=body | {"uuid": send_uuid("t_x:result")},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.json()["code"] == 0

    again = feishu_host(tmp_path, model_server, home, feishu, secrets)
    async with running_api(again) as client:
        await wait_connected(client, again, bot, channel_id)

        async def on_platform() -> bool:
            url = f"/api/conversations/{conversation['id']}/messages"
            return any(
                m["text"].startswith("报告写好了") and m["onPlatform"]
                for m in (await client.get(url)).json()["messages"]
            )

        await wait_until(again.bus, on_platform, timeout=15, what="the cut-off send confirmed")
        assert len([s for s in feishu.sent if "报告写好了" in words_of(s)]) == 1  # the platform kept one
        assert (await client.get("/api/attention")).json()["items"] == []  # nothing to ask the person
    await again.stop()
