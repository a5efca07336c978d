"""What a WeChat conversation gets, through the real host and outbox against the fake iLink server: chat
replies reach the peer with its latest token and are remembered by the platform's id; a result that finds
the reply window closed waits in needs-you and goes out first, as 「你不在时:…」, when the person writes
again; a send cut off by a crash is never sent again by itself; attachments are saved where the bot can
open them."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from pathlib import Path
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from core.channels.wechat.frames import MediaRef
from core.clock import FakeClock
from core.delivery.outbox import conversation_facts, local_zone
from core.delivery.policy import COALESCE_WINDOW_S
from core.store import deliveries as delivery_rows
from core.store import messages as msg_rows
from core.store.deliveries import DeliveryPurpose
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.fake_ilink_cdn import FakeILinkCdn
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.wechat_fixtures import (
    connect_wechat,
    on_the_clock,
    wechat_conversations,
    wechat_host,
    wechat_messages,
)
from tests.waiting import wait_until, yield_until


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
    on_the_clock(ilink, clock)
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
        await host.outbox.settled()  # any send under way has its answer
        assert len(ilink.sent) == 1  # quiet hours: it waits

        clock.advance(local(21, 8, 5) - clock.time())  # morning: quiet hours are over, the window is not open
        await host.outbox.flush()

        async def waiting_in_needs_you() -> bool:
            items = (await client.get("/api/attention")).json()["items"]
            return [i["subject"] for i in items] == ["1 条结果等你在微信里发条消息才能送达"]

        await wait_until(host.bus, waiting_in_needs_you, timeout=5, what="the held result in needs-you")
        await host.outbox.settled()  # any send under way has its answer
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
        facts = await host.db.read(
            lambda s: conversation_facts(s, {conversation["id"]}, local_zone(), now=clock.time())
        )
        assert facts[conversation["id"]].sent_today_unsolicited == 0  # what waited is not one of today's 3
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
        await again.outbox.settled()  # any send under way has its answer
        assert len(ilink.sent) == 1  # never sent again by itself

        r = await client.post(f"/api/attention/{item['id']}/retry", json={})
        assert r.status_code == 200, r.text
        await wait_until(again.bus, lambda: _sent_count(ilink, 2), timeout=10, what="sent again on request")
        assert ilink.sent[1].message.text.startswith("报告写好了")
        assert (await client.get("/api/attention")).json()["items"] == []
    await again.stop()


async def _sent_count(ilink: FakeILink, n: int) -> bool:
    return len(ilink.sent) >= n


async def test_an_image_and_a_file_are_saved_in_the_conversations_inbox_and_named_to_the_bot(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    model_server.default_text = "Got them."
    async with FakeILinkCdn() as cdn:
        png = b"\x89PNG\r\n\x1a\n" + b"pixels" * 100
        image = cdn.host(png)
        report = cdn.host(b"%PDF-1.4 the report", key_form="hex", file_name="报告.pdf")
        missing = cdn.host(b"gone")
        cdn.fail_next(404)  # the first download (the image) fails once: said in place of it, no crash
        host = make_host(
            tmp_path / "data",
            model_server.base_url,
            home=home,
            secrets=MemorySecretStore(),
            environ={"ERRAND_WECHAT_BASE_URL": ilink.base_url, "ERRAND_WECHAT_CDN_URL": cdn.base_url},
        )
        async with running_api(host) as client:
            bot, _ = await connect_wechat(client, host)
            ilink.user_says(
                "",
                item_list=[
                    {"type": 1, "text_item": {"text": "看看这些"}},
                    {"type": 2, "image_item": {"media": _media(missing)}},
                    {"type": 2, "image_item": {"media": _media(image)}},
                    {"type": 4, "file_item": {"media": _media(report), "file_name": report.file_name}},
                ],
            )
            await wait_until(host.bus, lambda: _sent_count(ilink, 1), timeout=10, what="the reply")
            [user] = [m for m in await wechat_messages(client) if m["role"] == "user"]
            lines = user["text"].splitlines()
            assert lines[0] == "看看这些"
            assert lines[1].startswith("[image could not be fetched: ")
            [conversation] = await wechat_conversations(client)
            workspace = host.bots.workspace_of(bot)
            assert lines[2:] == [
                f"[image: inbox/{conversation['id']}/{_saved_name(workspace, conversation['id'], '.png')}]",
                f"[file: inbox/{conversation['id']}/报告.pdf]",
            ]
            folder = workspace / "inbox" / conversation["id"]
            assert (folder / "报告.pdf").read_bytes() == b"%PDF-1.4 the report"
            assert (folder / _saved_name(workspace, conversation["id"], ".png")).read_bytes() == png
        await host.stop()


def _media(ref: MediaRef) -> dict[str, str]:
    return {
        "encrypt_query_param": ref.encrypted_query_param,
        "aes_key": ref.aes_key,
        "full_url": ref.full_url,
    }


def _saved_name(workspace: Path, conversation_id: str, suffix: str) -> str:
    [found] = [p.name for p in (workspace / "inbox" / conversation_id).iterdir() if p.suffix == suffix]
    return found


async def test_one_nudge_two_hours_before_the_window_closes_only_while_something_is_still_coming(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    clock = FakeClock(start=local(20, 9, 0))
    on_the_clock(ilink, clock)
    model_server.default_text = "好的。"
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore(), clock=clock)
    async with running_api(host) as client:
        await connect_wechat(client, host)
        ilink.user_says("每天早上提醒我喝水")
        await wait_until(host.bus, lambda: _sent_count(ilink, 1), timeout=10, what="the first reply")
        [conversation] = await wechat_conversations(client)
        tz = local_zone()
        r = await client.post(
            "/api/rules",
            json={
                "conversationId": conversation["id"],
                "title": "喝水",
                "instruction": "提醒我喝水",
                "kind": "remind",
                "schedule": {"kind": "daily", "time": "10:00", "tz": tz},
            },
        )
        assert r.status_code == 201, r.text

        # 2 h before the window closes (08:00) is in quiet hours: the nudge comes before they begin
        clock.advance(local(20, 21, 50) - clock.time())
        await host.outbox.flush()
        await wait_until(host.bus, lambda: _sent_count(ilink, 2), timeout=10, what="the nudge")
        nudge = ilink.sent[1].message.text
        assert nudge.startswith("接下来还有 1 件事要发给你(") and "「喝水」" in nudge
        assert nudge.endswith("回个「ok」我就能继续按时发给你。")
        await host.outbox.flush()
        await host.outbox.settled()  # any send under way has its answer
        assert len(ilink.sent) == 2  # once per window

        ilink.user_says("ok")  # a new window; its nudge is due 21 h from now
        await wait_until(host.bus, lambda: _sent_count(ilink, 3), timeout=10, what="the reply to ok")
        r = await client.put(f"/api/rules/{r.json()['id']}", json={"mode": "off"})
        assert r.status_code == 200, r.text
        clock.advance(21 * 3600.0 + 60)
        await host.outbox.flush()
        await host.outbox.settled()  # any send under way has its answer
        assert len(ilink.sent) == 3  # nothing is coming any more: no nudge
    await host.stop()


async def test_a_send_whose_answer_cannot_be_read_is_unsure_and_never_sent_again_by_itself(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    model_server.default_text = "pong"
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        await connect_wechat(client, host)
        ilink.fail_next["sendmessage"] = ["not-json"]  # HTTP 200 with a page we cannot read: it may have gone

        async def unsure_in_needs_you() -> bool:
            items = (await client.get("/api/attention")).json()["items"]
            return [i["kind"] for i in items] == ["unsure_delivery"]

        ilink.user_says("ping")
        await wait_until(host.bus, unsure_in_needs_you, timeout=10, what="the send is unsure")
        await host.outbox.flush()
        await host.outbox.settled()
        assert ilink.sent == []  # the fake refused it; the host never tried again by itself
        # ... nor will it later: no retry is waiting, the delivery waits for the person
        [waiting] = await host.db.read(lambda s: delivery_rows.in_status(s, "unsure"))
        assert waiting.purpose == "reply"
        [item] = (await client.get("/api/attention")).json()["items"]
        r = await client.post(f"/api/attention/{item['id']}/dismiss", json={})  # 知道了: it arrived
        assert r.status_code == 200, r.text
        assert (await client.get("/api/attention")).json()["items"] == []
        assert ilink.sent == []
    await host.stop()


async def test_a_send_the_platform_fails_is_tried_again_and_reaches_the_peer_once(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    clock = FakeClock(start=local(20, 10, 0))
    on_the_clock(ilink, clock)
    model_server.default_text = "pong"
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore(), clock=clock)
    async with running_api(host) as client:
        await connect_wechat(client, host)
        ilink.fail_next["sendmessage"] = [500, 502, "ret"]  # each plainly refused; then it takes it
        ilink.user_says("ping")
        for delay in (5.0, 10.0, 20.0):  # after each failure, the outbox tries again later
            await yield_until(partial(clock.sleeping_for, delay), f"a retry in {delay} s", rounds=500_000)
            clock.advance(delay)
        await wait_until(host.bus, lambda: _sent_count(ilink, 1), timeout=10, what="the reply, at last")
        assert [s.message.text for s in ilink.sent] == ["pong"]  # once: the failures never reached a peer
        [reply] = [m for m in await wechat_messages(client) if m["role"] == "assistant"]
        assert reply["onPlatform"]
        assert (await client.get("/api/attention")).json()["items"] == []
    await host.stop()


async def test_three_pushes_a_day_reach_wechat_then_the_rest_waits_for_tomorrow_and_a_failure_says_so(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    clock = FakeClock(start=local(20, 9, 0))
    on_the_clock(ilink, clock)
    model_server.default_text = "好"
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore(), clock=clock)
    async with running_api(host) as client:
        bot, _ = await connect_wechat(client, host)
        ilink.user_says("你好")
        await wait_until(host.bus, lambda: _sent_count(ilink, 1), timeout=10, what="the reply")
        [conversation] = await wechat_conversations(client)
        purposes: list[DeliveryPurpose] = ["result", "failure", "rule", "result"]
        for n, purpose in enumerate(purposes):
            await host.outbox.push(
                delivery_id=f"t_{n}:{purpose}",
                bot_id=bot,
                conversation_id=conversation["id"],
                purpose=purpose,
                text=f"「任务{n}」没做完:网页打不开" if purpose == "failure" else f"第 {n} 条",
            )
            clock.advance(COALESCE_WINDOW_S + 1)  # each gathers alone, then goes
            await host.outbox.flush()
            await host.outbox.settled()
        texts = [s.message.text for s in ilink.sent[1:]]
        assert len(texts) == 3, texts  # WeChat's daily cap
        assert texts[1].startswith("\u26a0\ufe0f「任务1」没做完")
        held = await host.db.read(lambda s: delivery_rows.get_delivery(s, "t_3:result"))
        assert held is not None and (held.status, held.held_reason) == ("held", "daily_cap")
    await host.stop()


async def test_after_its_channel_is_removed_a_conversations_results_stay_on_the_desktop(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    model_server.default_text = "hi"
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        bot, channel_id = await connect_wechat(client, host)
        r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
        assert r.status_code == 200, r.text
        ilink.user_says("hello")
        await wait_until(host.bus, lambda: _sent_count(ilink, 1), timeout=10, what="the reply")
        [conversation] = await wechat_conversations(client)
        assert (await client.delete(f"/api/bots/{bot}/channels/{channel_id}")).status_code == 204

        await host.outbox.push(
            delivery_id="t_late:result",
            bot_id=bot,
            conversation_id=conversation["id"],
            purpose="result",
            text="报告写好了",
        )
        await host.outbox.settled()

        async def on_the_desktop() -> bool:
            return any("报告写好了" in m["text"] for m in await wechat_messages(client))

        await wait_until(host.bus, on_the_desktop, timeout=10, what="the result in the conversation")
        assert len(ilink.sent) == 1  # nothing more went to WeChat
        assert (await client.get("/api/attention")).json()["items"] == []  # and nothing waits for it
    await host.stop()
