"""A Telegram channel through the real host and python-telegram-bot against the fake Bot API: a refused
token stores nothing; pairing with the one-time code makes the owner; chat is answered under the message; a
task's question comes with buttons and a press answers it; what was written while Errand was off is
answered once after a restart, and nothing confirmed is taken again."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_telegram import FakeTelegram
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.integration.telegram_fixtures import (
    FRIEND,
    OWNER,
    connect,
    pair,
    sent_with,
    telegram_host,
)
from tests.waiting import wait_until

TITLE = "Compare GPU prices"


async def test_a_refused_token_stores_nothing_and_pairing_with_the_code_makes_the_owner(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    script: SessionScript,
) -> None:
    script.fallback = Reply.text("你好,我在。")
    secrets = MemorySecretStore()
    host = telegram_host(tmp_path, model_server, home, telegram, secrets)
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        wrong = "987654321:AAH-not-the-token-000000000000000000"
        r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "telegram", "token": wrong})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("token")
        assert (await client.get(f"/api/bots/{bot}/channels")).json()["channels"] == []
        assert secrets.values == {}

        bot, shown = await connect(client, host, telegram)
        code = shown["pairingCode"]
        assert len(code) == 6 and code.isdigit()
        assert shown["name"] == f"@{telegram.username}"

        telegram.user_says(chat_id=FRIEND, user_id=FRIEND, text="/start 000000")  # not the code
        told = await sent_with(host, telegram, "还没配对")
        assert told.chat_id == FRIEND
        await pair(host, telegram, code)
        channel = (await client.get(f"/api/bots/{bot}/channels/{shown['id']}")).json()
        assert (channel["owner"], channel["pairingCode"], channel["status"]) == (str(OWNER), "", "connected")

        asked = telegram.user_says(chat_id=OWNER, user_id=OWNER, text="你好")
        reply = await sent_with(host, telegram, "你好,我在。")
        assert reply.reply_to == asked["message_id"]
        telegram.user_says(chat_id=FRIEND, user_id=FRIEND, text="/start " + code)  # used up: a stranger now
        refusal = await sent_with(host, telegram, "only for its owner")  # "/start 123456" reads as English
        assert refusal.chat_id == FRIEND
        assert len(script.requests["chat"]) == 1  # only the owner's 你好 reached chat
    await host.stop()


async def test_a_question_comes_with_buttons_and_a_press_answers_it(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
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
            Reply.text("等你的回答。"),  # the turn ends here, whenever the answer comes
        ],
    )
    host = telegram_host(tmp_path, model_server, home, telegram, MemorySecretStore())
    async with running_api(host) as client:
        _bot, shown = await connect(client, host, telegram)
        await pair(host, telegram, shown["pairingCode"])
        request = telegram.user_says(chat_id=OWNER, user_id=OWNER, text="帮我比较一下 GPU 价格")
        question = await sent_with(host, telegram, "包月价还是按小时价?")
        assert question.reply_to == request["message_id"]  # under the request that started the task
        assert question.reply_markup is not None
        buttons = [b for row in question.reply_markup["inline_keyboard"] for b in row]
        assert [b["text"] for b in buttons] == ["包月价", "按小时价"]
        assert all(len(b["callback_data"].encode()) <= 64 for b in buttons)

        script.add(TITLE, [report("done", "compared hourly", message="按小时价比较好了。")])
        telegram.press(
            chat_id=OWNER, user_id=OWNER, message_id=question.message_id, data=buttons[1]["callback_data"]
        )
        [answer] = await telegram.wait_for_callback_answers(1, timeout=15)
        assert "按小时价" in (answer.text or "")
        [edit] = await telegram.wait_for_edits(1, timeout=15)
        assert "已选择「按小时价」" in (edit.text or "")
        result = await sent_with(host, telegram, "按小时价比较好了")
        assert result.reply_to == request["message_id"]
        answered = [t for t in script.user_texts(TITLE, -1) if "The user answered" in t]
        assert len(answered) == 1 and "按小时价" in answered[0]
        assert (await client.get("/api/attention")).json()["items"] == []

        script.add(TITLE, [report("done", "more", message="细节如下。")])
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="详细说说", reply_to=result.message_id)
        going_on = await sent_with(host, telegram, "收到,")
        assert going_on.text == f"收到,「{TITLE}」继续。"
    await host.stop()


async def test_what_was_written_while_errand_was_off_is_answered_once_and_nothing_confirmed_comes_again(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    script: SessionScript,
) -> None:
    script.add("chat", [Reply.text("第一条。"), Reply.text("离线一收到。"), Reply.text("离线二收到。")])
    secrets = MemorySecretStore()
    host = telegram_host(tmp_path, model_server, home, telegram, secrets)
    async with running_api(host) as client:
        _bot, shown = await connect(client, host, telegram)
        await pair(host, telegram, shown["pairingCode"])
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="你好")
        await sent_with(host, telegram, "第一条。")
    await host.stop()

    telegram.user_says(chat_id=OWNER, user_id=OWNER, text="离线时的第一条")
    telegram.user_says(chat_id=OWNER, user_id=OWNER, text="离线时的第二条")
    telegram.queue_raw({"message": {"no": "chat"}})  # a malformed update in between: skipped, not blocking
    again = telegram_host(tmp_path, model_server, home, telegram, secrets)
    async with running_api(again) as client:
        await sent_with(again, telegram, "离线二收到。")
        said = [t for t in script.user_texts("chat", -1) if "离线时" in str(t)]
        assert said == ["离线时的第一条", "离线时的第二条"]
        await telegram.wait_until(lambda: not telegram.pending_updates, 15)  # asked past them: confirmed
        assert len(script.requests["chat"]) == 3
        assert len([s for s in telegram.sent if "离线" in s.text]) == 2
    await again.stop()


async def test_a_server_error_is_retried_and_a_lost_answer_is_unsure_never_sent_again_by_itself(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    script: SessionScript,
) -> None:
    script.add("chat", [Reply.text("第一条回复。"), Reply.text("第二条回复。")])
    host = telegram_host(tmp_path, model_server, home, telegram, MemorySecretStore())
    async with running_api(host) as client:
        _bot, shown = await connect(client, host, telegram)
        await pair(host, telegram, shown["pairingCode"])
        telegram.fail_sends(1, status=500)  # Telegram answered 500: it did not take it, so it goes again
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="你好")
        await sent_with(host, telegram, "第一条回复。", timeout=30)
        assert len([s for s in telegram.sent if "第一条回复" in s.text]) == 1

        telegram.lose_answer(1)  # taken, but no answer: it may be there, so it waits for the person's word
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="再来")

        async def asked() -> bool:
            items = (await client.get("/api/attention")).json()["items"]
            return any(i["kind"] == "unsure_delivery" for i in items)

        await wait_until(host.bus, asked, timeout=15, what="the unsure send in needs-you")
        await host.outbox.flush()
        await host.outbox.settled()
        assert len([s for s in telegram.sent if "第二条回复" in s.text]) == 1  # never sent again by itself
    await host.stop()


async def test_unreadable_updates_and_a_rate_limited_poll_block_nothing(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    script: SessionScript,
) -> None:
    script.fallback = Reply.text("在。")
    host = telegram_host(tmp_path, model_server, home, telegram, MemorySecretStore())
    async with running_api(host) as client:
        _bot, shown = await connect(client, host, telegram)
        await pair(host, telegram, shown["pairingCode"])
        for bad in (
            {"message": "not an object"},
            {"message": {"message_id": 1, "chat": {"id": OWNER}, "from": {"id": "x"}, "date": 1}},
            {"callback_query": {"id": "c1", "data": "q:x:0"}},
            {"edited_message": {"message_id": 9}},  # a kind we do not take
        ):
            telegram.queue_raw(bad)
        telegram.fail_polls(1, status=502)
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="还在吗")
        await sent_with(host, telegram, "在。", timeout=15)
        await telegram.wait_until(lambda: not telegram.pending_updates, 15)  # all confirmed, none stuck
        assert len(script.requests["chat"]) == 1
    await host.stop()


async def test_a_photo_is_saved_in_the_inbox_and_a_rate_limited_reply_waits_as_asked(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    script: SessionScript,
) -> None:
    script.fallback = Reply.text("看到图了。")
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    telegram.put_file("photo-1", png, file_path="photos/file_1.png")
    host = telegram_host(tmp_path, model_server, home, telegram, MemorySecretStore())
    async with running_api(host) as client:
        _bot, shown = await connect(client, host, telegram)
        await pair(host, telegram, shown["pairingCode"])
        telegram.rate_limit(1, retry_after=1)
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="看看这张", photo="photo-1")
        await sent_with(host, telegram, "看到图了。", timeout=15)
        assert len([s for s in telegram.sent if "看到图了" in s.text]) == 1
        [said] = [t for t in script.user_texts("chat", -1) if "[image:" in t]
        relative = said.split("[image: ", 1)[1].rstrip("]")
        assert relative.startswith("inbox/") and relative.endswith(".png")
        [bot] = (await client.get("/api/bots")).json()["bots"]
        assert (host.bots.workspace_of(bot["id"]) / relative).read_bytes() == png
    await host.stop()


async def test_tasks_lists_open_work_and_stops_one(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    script: SessionScript,
) -> None:
    script.add(
        "chat",
        [
            Reply.tool_calls(
                [ToolCallSpec("task_start", {"title": TITLE, "brief": "比较三家云的 GPU 价格"})]
            ),
            Reply.text("好,后台开始调研。"),
        ],
    )
    script.add(TITLE, [bash("while [ ! -f gate ]; do sleep 0.01; done")])  # busy until stopped
    host = telegram_host(tmp_path, model_server, home, telegram, MemorySecretStore())
    async with running_api(host) as client:
        _bot, shown = await connect(client, host, telegram)
        await pair(host, telegram, shown["pairingCode"])
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="帮我比较一下 GPU 价格")
        await sent_with(host, telegram, "后台开始调研")
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="/tasks")
        listing = await sent_with(host, telegram, "进行中的任务和规则")
        assert f"1. 任务「{TITLE}」" in listing.text
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="/tasks stop 1")
        stopped = await sent_with(host, telegram, "已停止")
        assert stopped.text == f"已停止任务「{TITLE}」。"
        assert len(script.requests["chat"]) == 2  # the commands never reached the chat agent
    await host.stop()


async def test_connecting_again_restarts_the_poll_and_removing_forgets_the_token(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    script: SessionScript,
) -> None:
    script.fallback = Reply.text("在。")
    secrets = MemorySecretStore()
    host = telegram_host(tmp_path, model_server, home, telegram, secrets)
    async with running_api(host) as client:
        bot, shown = await connect(client, host, telegram)
        await pair(host, telegram, shown["pairingCode"])
        r = await client.post(f"/api/bots/{bot}/channels/{shown['id']}/login")
        assert r.status_code == 200, r.text
        assert r.json()["login"] is None  # no QR code: a Telegram bot has no login to scan
        telegram.user_says(chat_id=OWNER, user_id=OWNER, text="还在吗")
        await sent_with(host, telegram, "在。")
        r = await client.delete(f"/api/bots/{bot}/channels/{shown['id']}")
        assert r.status_code in (200, 204)
        assert not [name for name in secrets.values if shown["id"] in name]
    await host.stop()
