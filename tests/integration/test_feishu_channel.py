"""A Feishu channel through the real host and lark-oapi against the fake Feishu server: connecting an app
(a refused secret stores nothing), one-to-one chat answered in the thread of the message, a group where only
@-mentions are taken and only the owner's start work, a task's result card in the thread of its request,
a question card answered by its button, and messages written while Errand was off answered once, in order,
on the next start."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from sqlalchemy.orm import Session

from core.store import channels as channel_rows
from tests.fakes.fake_feishu import FakeFeishu, mention
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.integration.feishu_fixtures import (
    FRIEND,
    GROUP,
    OWNER,
    P2P,
    app_of,
    buttons_of,
    channel,
    connect_feishu,
    feishu_host,
    sent_with,
    wait_connected,
    words_of,
)
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.waiting import wait_until

TITLE = "Compare GPU prices"


def start_task(title: str = TITLE) -> list[Reply]:
    return [
        Reply.tool_calls([ToolCallSpec("task_start", {"title": title, "brief": "比较三家云的 GPU 价格"})]),
        Reply.text("好,后台开始调研,好了告诉你。"),
    ]


async def test_a_refused_secret_stores_nothing_and_a_right_one_connects_the_app(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu
) -> None:
    secrets = MemorySecretStore()
    host = feishu_host(tmp_path, model_server, home, feishu, secrets)
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        r = await client.post(f"/api/bots/{bot}/channels", json=app_of(feishu, appSecret="wrong-secret"))
        assert r.status_code == 400, r.text
        assert r.json()["error"]["message"].startswith("appSecret")
        assert (await client.get(f"/api/bots/{bot}/channels")).json()["channels"] == []
        assert not [k for k in secrets.values if "app_secret" in k]
        r = await client.post(f"/api/bots/{bot}/channels", json=app_of(feishu, appId="not-an-app"))
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("appId")

        checked = await client.post("/api/channels/check-app", json=app_of(feishu))
        assert checked.status_code == 200, checked.text
        assert checked.json() == {"botName": feishu.app_name, "botOpenId": feishu.bot_open_id}

        bot, channel_id = await connect_feishu(client, host, feishu)
        shown = await channel(client, bot, channel_id)
        assert (shown["kind"], shown["name"], shown["account"]) == ("feishu", feishu.app_name, feishu.app_id)
        again = await client.post(f"/api/bots/{bot}/channels", json=app_of(feishu))
        # One app serves one bot.
        assert again.status_code == 400 and again.json()["error"]["message"].startswith("appId")
    await host.stop()


async def test_a_direct_message_is_answered_in_its_thread_and_its_writer_owns_the_bot(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("你好,我在。")
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        bot, channel_id = await connect_feishu(client, host, feishu)
        event = feishu.message_event(chat_id=P2P, sender=OWNER, text="你好")
        ack = await feishu.push(event)
        assert ack.code == 200
        reply = await sent_with(host, feishu, "你好,我在。")
        assert reply.msg_type == "text"
        assert reply.reply_to == event["event"]["message"]["message_id"]
        assert (await channel(client, bot, channel_id))["owner"] == OWNER

        again = await feishu.push(event)  # Feishu pushes the same event again: answered once
        assert again.code == 200
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="还在吗"))
        second = await feishu.wait_for_sent(2, timeout=15)
        assert second[1].reply_to != reply.reply_to  # under the second message
        assert len(script.requests["chat"]) == 2  # one turn per message: the re-pushed event made none
    await host.stop()


async def test_in_a_group_a_mention_starts_a_task_whose_result_card_comes_in_its_thread(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("好的。")])  # the owner's first words, one-to-one, make them the owner
    script.add("chat", start_task())
    script.add(TITLE, [report("done", "compared", message="X 云最便宜。")])
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="你好"))
        await sent_with(host, feishu, "好的。")

        chatter = feishu.message_event(chat_id=GROUP, sender=OWNER, chat_type="group", text="午饭吃啥")
        await feishu.push(chatter)
        bot_mention = mention(open_id=feishu.bot_open_id, name=feishu.app_name)
        request = feishu.message_event(
            chat_id=GROUP,
            sender=OWNER,
            chat_type="group",
            text="@_user_1 帮我比较一下 GPU 价格",
            mentions=[bot_mention],
        )
        await feishu.push(request)
        request_id = request["event"]["message"]["message_id"]
        ack = await sent_with(host, feishu, "后台开始调研")
        assert ack.reply_to == request_id
        result = await sent_with(host, feishu, "X 云最便宜")
        assert result.msg_type == "interactive" and result.reply_to == request_id
        assert [label for label, _ in buttons_of(result)] == ["详情", "继续改"]
        assert "回复这条消息可以继续问。" in words_of(result)
        said = [
            m["content"] for body in script.requests["chat"] for m in body["messages"] if m["role"] == "user"
        ]
        assert not any("午饭吃啥" in str(t) for t in said)  # not mentioned: not for the bot
        assert any(str(t).strip() == "帮我比较一下 GPU 价格" for t in said)  # the placeholder stripped
        assert len([s for s in feishu.sent if "X 云最便宜" in words_of(s)]) == 1

        follow = feishu.message_event(
            chat_id=GROUP,
            sender=OWNER,
            chat_type="group",
            text="@_user_1 详细说说",
            mentions=[bot_mention],
            parent_id=result.message_id,
        )
        script.add(TITLE, [report("done", "more", message="细节如下。")])
        await feishu.push(follow)
        going_on = await sent_with(host, feishu, "收到,")
        assert words_of(going_on) == f"收到,「{TITLE}」继续。"
    await host.stop()


async def test_someone_else_in_a_group_gets_one_polite_line_and_no_work(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("好的。")
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        bot, channel_id = await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="你好"))
        await sent_with(host, feishu, "好的。")
        bot_mention = mention(open_id=feishu.bot_open_id, name=feishu.app_name)
        for words in ("@_user_1 帮我查下服务器", "@_user_1 在吗"):
            await feishu.push(
                feishu.message_event(
                    chat_id=GROUP, sender=FRIEND, chat_type="group", text=words, mentions=[bot_mention]
                )
            )
        refusal = await sent_with(host, feishu, "只为它的主人工作")
        assert refusal.chat_id == GROUP and refusal.reply_to
        await wait_until(
            host.bus,
            lambda: _stranger_listed(client, bot, channel_id),
            timeout=10,
            what="the friend listed as a stranger",
        )
        assert len([s for s in feishu.sent if "只为它的主人工作" in words_of(s)]) == 1  # once a day
        assert len(script.requests["chat"]) == 1  # only the owner's 你好
    await host.stop()


async def _stranger_listed(client: httpx.AsyncClient, bot: str, channel_id: str) -> bool:
    return FRIEND in (await channel(client, bot, channel_id))["strangers"]


async def test_a_question_card_is_answered_by_its_button_and_the_card_shows_the_choice(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", start_task())
    script.add(
        TITLE,
        [
            report(
                "needs_you", "need the basis", question="包月价还是按小时价?", options=["包月价", "按小时价"]
            ),
            Reply.text("等你的回答。"),  # the turn ends here, whenever the answer comes
        ],
    )
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="帮我比较一下 GPU 价格"))
        card = await sent_with(host, feishu, "包月价还是按小时价?")
        assert card.msg_type == "interactive"
        buttons = dict(buttons_of(card))
        assert list(buttons) == ["包月价", "按小时价"]
        [item] = (await client.get("/api/attention")).json()["items"]
        assert item["kind"] == "question"

        script.add(TITLE, [report("done", "compared hourly", message="按小时价比较好了。")])
        press = feishu.card_action_event(
            operator=OWNER, message_id=card.message_id, chat_id=P2P, value=buttons["按小时价"]
        )
        ack = await feishu.push(press)
        assert ack.code == 200 and ack.data is not None
        assert "按小时价" in ack.data["toast"]["content"]
        [patch] = await feishu.wait_for_patches(1)
        assert patch.message_id == card.message_id
        shown = " ".join(_all_texts(patch.content))
        assert "已选择「按小时价」" in shown
        assert not buttons_of_content(patch.content)  # nobody presses a second one
        await sent_with(host, feishu, "按小时价比较好了")
        answered = [t for t in script.user_texts(TITLE, -1) if "The user answered" in t]
        assert len(answered) == 1 and "按小时价" in answered[0]
        assert (await client.get("/api/attention")).json()["items"] == []
    await host.stop()


def buttons_of_content(content: dict[str, object]) -> list[object]:
    elements = content.get("elements")
    rows = [e for e in elements if isinstance(e, dict)] if isinstance(elements, list) else []
    return [a for row in rows for a in row.get("actions", [])]


def _all_texts(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [str(node["content"])] if isinstance(node.get("content"), str) else []
        return found + [t for v in node.values() for t in _all_texts(v)]
    if isinstance(node, list):
        return [t for item in node for t in _all_texts(item)]
    return []


async def test_messages_written_while_errand_was_off_are_answered_once_in_order_on_the_next_start(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("好的。"), Reply.text("第一条收到。"), Reply.text("第二条收到。")])
    secrets = MemorySecretStore()
    host = feishu_host(tmp_path, model_server, home, feishu, secrets)
    async with running_api(host) as client:
        bot, channel_id = await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="你好"))
        await sent_with(host, feishu, "好的。")
    await host.stop()

    first = feishu.say_while_offline(chat_id=P2P, sender=OWNER, text="离线时的第一条")
    feishu.say_while_offline(chat_id=P2P, sender=OWNER, text="离线时的第二条")
    again = feishu_host(tmp_path, model_server, home, feishu, secrets)
    async with running_api(again) as client:
        await wait_connected(client, again, bot, channel_id)
        await sent_with(again, feishu, "第二条收到。")
        # The first one comes once more on the socket (Feishu re-pushed it): it is taken once.
        repushed = feishu.message_event(
            chat_id=P2P, sender=OWNER, text="离线时的第一条", message_id=first, history=False
        )
        ack = await feishu.push(repushed)
        assert ack.code == 200
        said = [json.loads(json.dumps(t)) for t in script.user_texts("chat", -1)]
        assert [t for t in said if "离线时" in str(t)] == ["离线时的第一条", "离线时的第二条"]
        firsts = [s for s in feishu.sent if "第一条收到" in words_of(s)]
        seconds = [s for s in feishu.sent if "第二条收到" in words_of(s)]
        assert len(firsts) == 1 and len(seconds) == 1
        assert feishu.sent.index(firsts[0]) < feishu.sent.index(seconds[0])

        def stored(s: Session) -> int:
            return len([r for r in channel_rows.unhandled(s, channel_id)])

        assert await again.db.read(stored) == 0
    await again.stop()


async def test_a_rejected_connection_says_why_and_a_dropped_one_comes_back(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("在。")
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        bot, channel_id = await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="你好"))
        await feishu.wait_for_sent(1, timeout=15)
        feishu.reject_handshakes(1)  # too many connections, the next time it connects
        await feishu.drop_connection()

        async def refused() -> bool:
            shown = await channel(client, bot, channel_id)
            return bool(shown["status"] == "error" and "too many connections" in shown["reason"])

        await wait_until(host.bus, refused, timeout=15, what="the refusal shown")
        await wait_connected(client, host, bot, channel_id)  # tried again at the server's interval
        feishu.say_while_offline(chat_id=P2P, sender=OWNER, text="断线时发的")  # caught up on connect
        await feishu.drop_connection(abrupt=True)
        await wait_connected(client, host, bot, channel_id)
        caught_up = await feishu.wait_for_sent(2, timeout=15)
        assert words_of(caught_up[1]) == "在。"
        assert any("断线时发的" in t for t in script.user_texts("chat", -1))
    await host.stop()


async def test_an_approval_card_is_decided_by_its_button(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", start_task("Clean build"))
    script.add(
        "Clean build",
        [
            bash("mkdir -p build/x && rm -rf build && echo removed"),
            report("done", "cleaned", message="build 已清理。"),
        ],
    )
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="清理一下 build 目录"))
        card = await sent_with(host, feishu, "rm -rf build")
        assert card.msg_type == "interactive"
        buttons = dict(buttons_of(card))
        assert list(buttons) == ["批准一次", "拒绝"]
        press = feishu.card_action_event(
            operator=OWNER, message_id=card.message_id, chat_id=P2P, value=buttons["批准一次"]
        )
        ack = await feishu.push(press)
        assert ack.data is not None and ack.data["toast"]["content"] == "已批准一次"
        [patch] = await feishu.wait_for_patches(1)
        assert "已选择「批准一次」" in " ".join(_all_texts(patch.content))
        await sent_with(host, feishu, "build 已清理")
        assert "removed" in script.requests["Clean build"][1]["messages"][-1]["content"]
        assert (await client.get("/api/attention")).json()["items"] == []
    await host.stop()


async def test_an_image_is_saved_in_the_conversations_inbox_and_named_to_the_bot(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.fallback = Reply.text("看到图了。")
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        event = feishu.message_event(
            chat_id=P2P, sender=OWNER, msg_type="image", content={"image_key": "img_v3_0001"}
        )
        feishu.put_resource(event["event"]["message"]["message_id"], "img_v3_0001", png)
        await feishu.push(event)
        await sent_with(host, feishu, "看到图了。")
        [said] = [t for t in script.user_texts("chat", -1) if "[image:" in t]
        relative = said.removeprefix("[image: ").removesuffix("]")
        assert relative.startswith("inbox/") and relative.endswith(".png")
        [bot] = (await client.get("/api/bots")).json()["bots"]
        assert (host.bots.workspace_of(bot["id"]) / relative).read_bytes() == png
    await host.stop()


async def test_a_button_on_a_question_the_task_withdrew_is_a_late_answer(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", start_task())
    script.add(
        TITLE,
        [
            report(
                "needs_you",
                "need the basis",
                question="包月价还是按小时价?",
                options=["包月价", "按小时价"],
                default="包月价",
            ),
            bash("while [ ! -f gate ]; do sleep 0.01; done"),
            report("done", "went monthly", message="按包月价比较好了。"),
        ],
    )
    host = feishu_host(tmp_path, model_server, home, feishu, MemorySecretStore())
    async with running_api(host) as client:
        await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="帮我比较一下 GPU 价格"))
        card = await sent_with(host, feishu, "包月价还是按小时价?")
        assert "不回复就按「包月价」做" in words_of(card)
        [task] = (await client.get("/api/tasks")).json()["tasks"]
        detail = (await client.get(f"/api/tasks/{task['id']}")).json()
        (Path(detail["folder"]) / "gate").write_text("go")
        await sent_with(host, feishu, "按包月价比较好了")  # it went with the default

        script.add(TITLE, [report("done", "redone hourly", message="按小时价重新比较了。")])
        hourly = dict(buttons_of(card))["按小时价"]
        press = feishu.card_action_event(
            operator=OWNER, message_id=card.message_id, chat_id=P2P, value=hourly
        )
        ack = await feishu.push(press)
        assert ack.data is not None and ack.data["toast"]["content"] == "已转告:按小时价"
        await sent_with(host, feishu, "按小时价重新比较了")
        late = [t for t in script.user_texts(TITLE, -1) if "asked earlier" in t]
        assert len(late) == 1 and "按小时价" in late[0]
    await host.stop()


async def test_catch_up_finds_a_mention_before_much_other_talk_in_a_busy_group(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, feishu: FakeFeishu, script: SessionScript
) -> None:
    script.add("chat", [Reply.text("好的。"), Reply.text("群里这条收到。"), Reply.text("在群里。")])
    secrets = MemorySecretStore()
    host = feishu_host(tmp_path, model_server, home, feishu, secrets)
    bot_mention = mention(open_id=feishu.bot_open_id, name=feishu.app_name)
    async with running_api(host) as client:
        bot, channel_id = await connect_feishu(client, host, feishu)
        await feishu.push(feishu.message_event(chat_id=P2P, sender=OWNER, text="你好"))
        await sent_with(host, feishu, "好的。")
        first = feishu.message_event(
            chat_id=GROUP, sender=OWNER, chat_type="group", text="@_user_1 在吗", mentions=[bot_mention]
        )
        await feishu.push(first)
        await sent_with(host, feishu, "群里这条收到。")
    await host.stop()

    feishu.say_while_offline(
        chat_id=GROUP,
        sender=OWNER,
        text="@_user_1 离线时在群里问的",
        chat_type="group",
        mentions=[bot_mention],
    )
    for n in range(120):  # then more than two pages of talk not for the bot
        feishu.say_while_offline(chat_id=GROUP, sender=FRIEND, text=f"闲聊 {n}", chat_type="group")
    again = feishu_host(tmp_path, model_server, home, feishu, secrets)
    async with running_api(again) as client:
        await wait_connected(client, again, bot, channel_id)
        answer = await sent_with(again, feishu, "在群里。")
        assert answer.chat_id == GROUP
        said = " ".join(str(t) for t in script.user_texts("chat", -1))
        assert "离线时在群里问的" in said and "闲聊" not in said
    await again.stop()
