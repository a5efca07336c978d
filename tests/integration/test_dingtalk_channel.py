"""A DingTalk channel through the real host, our stream connection and OpenAPI client against the fake
DingTalk: a refused secret stores nothing; the first one-to-one writer is the owner and is answered through
the session webhook; a group is worked in only once the owner allowed it; a task's question comes as a
card whose button answers it; a send counts only once DingTalk confirmed it; a `disconnect` loses
nothing."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest

from core.channels.dingtalk.sender import READ_BACK_WAITS_S
from tests.fakes.fake_dingtalk import FakeDingTalk
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.integration.dingtalk_fixtures import (
    GROUP,
    OWNER,
    STRANGER,
    app_of,
    connect,
    count,
    dingtalk_host,
    sent_with,
)
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, report
from tests.waiting import wait_until

TITLE = "Compare GPU prices"


async def test_a_refused_secret_stores_nothing_and_the_first_writer_is_answered_as_the_owner(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    dingtalk: FakeDingTalk,
    script: SessionScript,
) -> None:
    script.fallback = Reply.text("你好,我在。")
    secrets = MemorySecretStore()
    host = dingtalk_host(tmp_path, model_server, home, dingtalk, secrets)
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        r = await client.post(f"/api/bots/{bot}/channels", json=app_of(dingtalk, appSecret="not-the-secret"))
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("appSecret")
        r = await client.post(f"/api/bots/{bot}/channels", json=app_of(dingtalk, appKey="a b"))
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("appKey")
        assert (await client.get(f"/api/bots/{bot}/channels")).json()["channels"] == []
        assert secrets.values == {}

        bot, shown = await connect(client, dingtalk)
        assert (shown["kind"], shown["account"], shown["name"]) == ("dingtalk", dingtalk.app_key, "")
        assert list(secrets.values.values()) == [dingtalk.app_secret]
        r = await client.post(f"/api/bots/{bot}/channels", json=app_of(dingtalk))
        assert r.status_code == 400 and "connected already" in r.json()["error"]["message"]

        said = await dingtalk.user_says("你好", staff_id=OWNER)
        assert said is not None
        reply = await sent_with(dingtalk, "你好,我在。")
        assert (reply.via, reply.session) == ("webhook", said.session)  # the session webhook, while valid
        ack = await dingtalk.wait_for_ack(said.message_id)
        assert ack.code == 200
        channel = (await client.get(f"/api/bots/{bot}/channels/{shown['id']}")).json()
        assert (channel["owner"], channel["status"]) == (OWNER, "connected")

        await dingtalk.user_says("hello there", staff_id=STRANGER)
        await sent_with(dingtalk, "only for its owner")
        assert len(script.requests["chat"]) == 1  # only the owner's 你好 reached chat
        assert dingtalk.bad_acks == []
    await host.stop()


async def test_a_group_is_worked_in_only_once_the_owner_allowed_it(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    dingtalk: FakeDingTalk,
    script: SessionScript,
) -> None:
    script.add("chat", [Reply.text("先说私聊。")])
    host = dingtalk_host(tmp_path, model_server, home, dingtalk, MemorySecretStore())
    async with running_api(host) as client:
        bot, shown = await connect(client, dingtalk)
        await dingtalk.user_says("你好", staff_id=OWNER)  # the owner, by writing first
        await sent_with(dingtalk, "先说私聊。")

        await dingtalk.user_says("@Errand 帮我看看这个", staff_id=OWNER, group=GROUP)
        await dingtalk.user_says("@Errand 还有这个", staff_id=OWNER, group=GROUP)
        assert await dingtalk.user_says("闲聊,没有 @", staff_id=OWNER, group=GROUP, at_bot=False) is None

        async def asked() -> list[dict[str, object]]:
            items = (await client.get("/api/attention")).json()["items"]
            return [i for i in items if i["kind"] == "group_admission"]

        async def one_asked() -> bool:
            return len(await asked()) == 1

        await wait_until(host.bus, one_asked, timeout=15, what="the group's admission in needs-you")
        [item] = await asked()
        assert str(item["subject"]).endswith("被拉进了群「测试群」,要在这个群里工作吗?")
        assert item["actions"] == ["approve", "deny"]
        assert len(script.requests["chat"]) == 1  # nothing from the group reached chat yet
        channel = (await client.get(f"/api/bots/{bot}/channels/{shown['id']}")).json()
        assert channel["groups"] == [{"id": GROUP[0], "title": "测试群", "admission": "asked"}]

        script.fallback = Reply.text("群里收到。")
        r = await client.post(f"/api/attention/{item['id']}/approve", json={})
        assert r.status_code == 200, r.text
        reply = await sent_with(dingtalk, "群里收到。")
        assert reply.via == "webhook" and reply.at_user_ids == (OWNER,)  # in the group, @-ing who wrote
        await dingtalk.wait_until(lambda: "还有这个" in str(script.user_texts("chat", -1)), 15)
        said = " ".join(str(t) for t in script.user_texts("chat", -1))
        assert said.index("帮我看看这个") < said.index("还有这个")  # in the order written
        assert await asked() == []
        channel = (await client.get(f"/api/bots/{bot}/channels/{shown['id']}")).json()
        assert channel["groups"][0]["admission"] == "allowed"

        other = ("cidOtherGroup==", "闲聊群")
        await dingtalk.user_says("@Errand 在吗", staff_id=OWNER, group=other)
        await wait_until(host.bus, one_asked, timeout=15, what="the second group's admission")
        [item] = await asked()
        r = await client.post(f"/api/attention/{item['id']}/deny", json={})
        assert r.status_code == 200, r.text
        await dingtalk.user_says("@Errand 还在吗", staff_id=OWNER, group=other)
        await dingtalk.user_says("再问一句", staff_id=OWNER)  # a marker: handed on after the refused group
        script.fallback = Reply.text("私聊又收到。")
        await sent_with(dingtalk, "私聊又收到。")
        assert not any("在吗" in str(t) for t in script.user_texts("chat", -1))
        assert all(s.to != other[0] for s in dingtalk.sent)  # silent there
    await host.stop()


async def test_a_question_comes_as_a_card_whose_button_answers_it_and_the_result_can_be_quoted(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    dingtalk: FakeDingTalk,
    script: SessionScript,
) -> None:
    script.add(
        "chat",
        [
            Reply.tool_calls(
                [ToolCallSpec("task_start", {"title": TITLE, "brief": "比较三家云的 GPU 价格"})]
            ),
            Reply.text("好,后台开始调研,好了告诉你。"),
        ],
    )
    script.add(
        TITLE,
        [
            report(
                "needs_you", "need the basis", question="包月价还是按小时价?", options=["包月价", "按小时价"]
            ),
            Reply.text("等你的回答。"),
        ],
    )
    host = dingtalk_host(tmp_path, model_server, home, dingtalk, MemorySecretStore())
    async with running_api(host) as client:
        await connect(client, dingtalk)
        await dingtalk.user_says("帮我比较一下 GPU 价格", staff_id=OWNER)
        question = await sent_with(dingtalk, "包月价还是按小时价?")
        assert question.via == "card" and question.card is not None
        [buttons] = [c["actions"] for c in question.card["contents"] if c.get("type") == "action"]
        assert [b["label"]["text"] for b in buttons] == ["包月价", "按小时价"]

        await dingtalk.press(question.card_biz_id, buttons[1]["id"], staff_id=STRANGER)  # not theirs
        script.add(TITLE, [report("done", "compared hourly", message="按小时价比较好了。")])
        await dingtalk.press(question.card_biz_id, buttons[1]["id"], staff_id=OWNER)
        [update] = await dingtalk.wait_for_card_updates(1, timeout=15)
        assert "已选择「按小时价」" in str(update.card)
        assert not [c for c in update.card["contents"] if c.get("type") == "action"]  # the buttons gone
        result = await sent_with(dingtalk, "按小时价比较好了")
        answered = [t for t in script.user_texts(TITLE, -1) if "The user answered" in t]
        assert len(answered) == 1 and "按小时价" in answered[0]  # the stranger's press did nothing
        assert (await client.get("/api/attention")).json()["items"] == []

        script.add(TITLE, [report("done", "more", message="细节如下。")])
        await dingtalk.user_says("详细说说", staff_id=OWNER, quote=dingtalk.quote_of_bot(result.text))
        going_on = await sent_with(dingtalk, "收到,")
        assert going_on.text == f"收到,「{TITLE}」继续。"
        await sent_with(dingtalk, "细节如下。")
    await host.stop()


def _reads(dingtalk: FakeDingTalk) -> int:
    return len([c for c in dingtalk.calls if c[1].endswith("/readStatus")])


@pytest.fixture
async def late_webhooks() -> FakeDingTalk:
    """A fake whose session webhooks are past their end when they arrive: every send takes the OpenAPI."""
    return FakeDingTalk(now=lambda: time.time() - 3 * 3600)


async def test_a_send_counts_only_once_read_back_and_a_throttled_or_unconfirmed_one_arrives_once(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    late_webhooks: FakeDingTalk,
    script: SessionScript,
) -> None:
    script.add("chat", [Reply.text("第一条回复。"), Reply.text("第二条回复。"), Reply.text("第三条回复。")])
    async with late_webhooks as dingtalk:
        host = dingtalk_host(tmp_path, model_server, home, dingtalk, MemorySecretStore())
        async with running_api(host) as client:
            await connect(client, dingtalk)
            dingtalk.throttle(OWNER, 1)  # held back once: not delivered, so it goes again
            await dingtalk.user_says("你好", staff_id=OWNER)
            first = await sent_with(dingtalk, "第一条回复。", timeout=30)
            assert first.via == "batch"
            await dingtalk.wait_until(lambda: _reads(dingtalk) == 1, 15)  # read back: SUCCESS
            await host.outbox.settled()

            dingtalk.hold_status(5)  # DingTalk says PROCESSING past our reads: read back, not sent again
            await dingtalk.user_says("再来", staff_id=OWNER)
            await sent_with(dingtalk, "第二条回复。", timeout=30)
            # Five reads said PROCESSING (the first send's, then it counts as unconfirmed); the outbox tries
            # again, and the retry reads the earlier send back (SUCCESS now) instead of sending it again.
            reads = 1 + (1 + len(READ_BACK_WAITS_S)) + 1  # the first reply's, the second's five, the retry's
            await dingtalk.wait_until(lambda: _reads(dingtalk) >= reads, 30)
            await host.outbox.settled()
            assert (count(dingtalk, "第一条回复。"), count(dingtalk, "第二条回复。")) == (1, 1)
            assert (await client.get("/api/attention")).json()["items"] == []

            dingtalk.lose_answer(1)  # taken, no answer: may be there, so it waits for the person's word
            await dingtalk.user_says("第三", staff_id=OWNER)

            async def unsure() -> bool:
                items = (await client.get("/api/attention")).json()["items"]
                return any(i["kind"] == "unsure_delivery" for i in items)

            await wait_until(host.bus, unsure, timeout=20, what="the unsure send in needs-you")
            assert count(dingtalk, "第三条回复。") == 1
        await host.stop()


async def test_a_disconnect_opens_the_next_connection_at_once_and_loses_nothing_said_meanwhile(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    dingtalk: FakeDingTalk,
    script: SessionScript,
) -> None:
    script.fallback = Reply.text("收到。")
    host = dingtalk_host(tmp_path, model_server, home, dingtalk, MemorySecretStore())
    async with running_api(host) as client:
        await connect(client, dingtalk)
        await dingtalk.ping()
        [pong] = await dingtalk.wait_for_pongs(1)
        assert pong is not None
        old = await dingtalk.tell_disconnect(grace_s=2.0)
        await dingtalk.wait_connected(2, timeout=15)  # the next one, before the old one closed
        assert not old.closed.is_set()
        await dingtalk.push_raw("not json")  # skipped, and the connection goes on
        await dingtalk.push_raw({"type": "CALLBACK", "headers": {"topic": "/v1.0/im/bot/messages/get"}})
        said = await dingtalk.user_says("断线时说的", staff_id=OWNER)
        assert said is not None
        await sent_with(dingtalk, "收到。")
        await dingtalk.wait_for_ack(said.message_id)
        assert [t for t in script.user_texts("chat", -1) if "断线时说的" in str(t)] == ["断线时说的"]
        await dingtalk.drop_connection()
        await dingtalk.wait_connected(3, timeout=15)
        await dingtalk.user_says("重连后说的", staff_id=OWNER)
        await dingtalk.wait_until(lambda: count(dingtalk, "收到。") == 2, 15)
        assert dingtalk.bad_acks == []
    await host.stop()


async def test_in_a_group_without_a_live_webhook_the_reply_goes_by_the_group_send_and_is_read_back(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    late_webhooks: FakeDingTalk,
    script: SessionScript,
) -> None:
    script.add("chat", [Reply.text("私聊收到。")])
    async with late_webhooks as dingtalk:
        host = dingtalk_host(tmp_path, model_server, home, dingtalk, MemorySecretStore())
        async with running_api(host) as client:
            bot, shown = await connect(client, dingtalk)
            await dingtalk.user_says("你好", staff_id=OWNER)
            await sent_with(dingtalk, "私聊收到。", timeout=30)
            r = await client.get(f"/api/bots/{bot}/channels/{shown['id']}")
            assert r.json()["groups"] == []
            await dingtalk.user_says("@Errand 群里问一句", staff_id=OWNER, group=GROUP)

            async def asked() -> bool:
                return bool((await client.get(f"/api/bots/{bot}/channels/{shown['id']}")).json()["groups"])

            await wait_until(host.bus, asked, timeout=15, what="the group asked about")
            script.fallback = Reply.text("群里收到。")
            path = f"/api/bots/{bot}/channels/{shown['id']}/groups/{quote(GROUP[0], safe='')}"
            r = await client.put(path, json={"admitted": True})
            assert r.status_code == 200 and r.json()["groups"][0]["admission"] == "allowed", r.text
            reply = await sent_with(dingtalk, "群里收到。", timeout=30)
            assert (reply.via, reply.to) == ("group", GROUP[0])
            await dingtalk.wait_until(
                lambda: any(c[1].endswith("/groupMessages/query") for c in dingtalk.calls), 15
            )
            await host.outbox.settled()
            assert count(dingtalk, "群里收到。") == 1
            assert (await client.get("/api/attention")).json()["items"] == []
        await host.stop()


async def test_a_send_left_unconfirmed_when_errand_stopped_is_read_back_after_the_restart_not_sent_again(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    late_webhooks: FakeDingTalk,
    script: SessionScript,
) -> None:
    script.add("chat", [Reply.text("慢慢确认的回复。")])
    secrets = MemorySecretStore()
    async with late_webhooks as dingtalk:
        host = dingtalk_host(tmp_path, model_server, home, dingtalk, secrets)
        async with running_api(host) as client:
            await connect(client, dingtalk)
            dingtalk.hold_status(1 + len(READ_BACK_WAITS_S))  # every read of the first try: PROCESSING
            await dingtalk.user_says("你好", staff_id=OWNER)
            await sent_with(dingtalk, "慢慢确认的回复。", timeout=30)
            await dingtalk.wait_until(lambda: _reads(dingtalk) == 1 + len(READ_BACK_WAITS_S), 30)
            await host.outbox.settled()
        await host.stop()  # before the outbox's retry

        again = dingtalk_host(tmp_path, model_server, home, dingtalk, secrets)
        async with running_api(again):
            await dingtalk.wait_until(lambda: _reads(dingtalk) > 1 + len(READ_BACK_WAITS_S), 30)
            await again.outbox.settled()
            assert count(dingtalk, "慢慢确认的回复。") == 1  # read back (SUCCESS now), not sent again
        await again.stop()
