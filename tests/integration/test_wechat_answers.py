"""Answers and follow-ups from WeChat, through the real host against the fake iLink server: a task started
from WeChat asks with numbered options and a bare number answers it (needs-you lists the question
meanwhile, and is empty after); an approval is decided with `y <code>`; a quote of a pushed result goes
straight to its task; `/tasks` lists what is open and stops one."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.orm import Session

from core.host import Host
from core.store import deliveries as delivery_rows
from core.translations import text
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.integration.wechat_fixtures import channel, connect_wechat, wechat_conversations, wechat_host
from tests.waiting import wait_until

TITLE = "Compare GPU prices"


def start_task(title: str = TITLE) -> list[Reply]:
    return [
        Reply.tool_calls([ToolCallSpec("task_start", {"title": title, "brief": "比较三家云的 GPU 价格"})]),
        Reply.text("好,后台开始调研,好了告诉你。"),
    ]


async def sent_with(host: Host, ilink: FakeILink, words: str) -> str:
    """Wait until a message with `words` went out on WeChat; its text."""

    async def found() -> bool:
        return any(words in s.message.text for s in ilink.sent)

    await wait_until(host.bus, found, timeout=15, what=f"a WeChat message with {words!r}")
    return next(s.message.text for s in ilink.sent if words in s.message.text)


async def task_stage(client: httpx.AsyncClient) -> str:
    [task] = (await client.get("/api/tasks")).json()["tasks"]
    return str(task["stage"])


async def no_quiet_hours(client: httpx.AsyncClient, bot: str) -> None:
    r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
    assert r.status_code == 200, r.text


async def test_a_bare_number_answers_the_question_a_task_asked_on_wechat(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink, script: SessionScript
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
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        bot, _ = await connect_wechat(client, host)
        await no_quiet_hours(client, bot)
        ilink.user_says("帮我比较一下 GPU 价格")
        question = await sent_with(host, ilink, "包月价还是按小时价?")
        assert question.splitlines() == [
            f"❓「{TITLE}」想问你:包月价还是按小时价?",
            "1. 包月价",
            "2. 按小时价",
            "(回复编号,或引用这条消息回答)",
        ]
        [item] = (await client.get("/api/attention")).json()["items"]  # the desktop lists it meanwhile
        assert item["kind"] == "question"

        script.add(TITLE, [report("done", "compared hourly", message="按小时价比较好了。")])
        ilink.user_says("2")
        assert await sent_with(host, ilink, "收到,") == f"收到,「{TITLE}」继续。"
        result = await sent_with(host, ilink, "按小时价比较好了")
        assert result.endswith("引用这条消息可以继续问。")
        answered = [t for t in script.user_texts(TITLE, -1) if "The user answered" in t]
        assert len(answered) == 1 and "按小时价" in answered[0]
        assert (await client.get("/api/attention")).json()["items"] == []
        assert len(script.requests["chat"]) == 2  # the "2" never reached the chat agent
    await host.stop()


async def test_a_quote_of_a_result_goes_to_its_task_and_tasks_lists_and_stops(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink, script: SessionScript
) -> None:
    script.add("chat", start_task())
    script.add(
        TITLE,
        [report("done", "compared", message="X 云最便宜。")],
    )
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        bot, _ = await connect_wechat(client, host)
        await no_quiet_hours(client, bot)
        ilink.user_says("帮我比较一下 GPU 价格")
        await sent_with(host, ilink, "X 云最便宜")
        pushed = next(s for s in ilink.sent if "X 云最便宜" in s.message.text)

        script.add(TITLE, [bash("while [ ! -f gate ]; do sleep 0.01; done")])  # busy until stopped
        ilink.user_says("详细说说", quote_of=pushed.message_id)
        assert await sent_with(host, ilink, "收到,") == f"收到,「{TITLE}」继续。"

        async def reached_the_task() -> bool:
            return any("详细说说" in t for t in script.user_texts(TITLE, -1))

        await wait_until(host.bus, reached_the_task, timeout=10, what="the quoted follow-up in the task")

        ilink.user_says("/tasks")
        listing = await sent_with(host, ilink, "进行中的任务和规则")
        assert f"1. 任务「{TITLE}」" in listing
        ilink.user_says("/tasks stop 1")
        assert await sent_with(host, ilink, "已停止") == f"已停止任务「{TITLE}」。"
        await wait_until(host.bus, lambda: _stage_is(client, "stopped"), timeout=10, what="the task stopped")
        assert len(script.requests["chat"]) == 2  # none of these reached the chat agent
    await host.stop()


async def _stage_is(client: httpx.AsyncClient, stage: str) -> bool:
    return (await task_stage(client)).startswith(stage)


async def test_someone_else_is_told_politely_once_and_answered_once_the_owner_allows_them(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink, script: SessionScript
) -> None:
    script.fallback = Reply.text("Hi there.")
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        bot, channel_id = await connect_wechat(client, host)
        ilink.user_says("hi, who are you?", user="friend@im.wechat")
        refusal = await sent_with(host, ilink, "only for its owner")
        assert refusal == text("en", "channel_answer.not_served")
        ilink.user_says("hello?", user="friend@im.wechat")
        await ilink.wait_for_polls(ilink.polls + 2)  # past the poll that brought the second message
        shown = await channel(client, bot, channel_id)
        assert (shown["strangers"], shown["allowed"]) == (["friend@im.wechat"], [])
        assert [s.message.to_user for s in ilink.sent] == ["friend@im.wechat"]  # told once, not twice
        assert script.requests["chat"] == []  # neither message reached the model

        r = await client.put(f"/api/bots/{bot}/channels/{channel_id}", json={"allowed": ["friend@im.wechat"]})
        assert r.status_code == 200, r.text
        assert (r.json()["allowed"], r.json()["strangers"]) == (["friend@im.wechat"], [])
        ilink.user_says("now can you help?", user="friend@im.wechat")
        assert await sent_with(host, ilink, "Hi there.") == "Hi there."
        assert ilink.sent[-1].message.to_user == "friend@im.wechat"
    await host.stop()


async def test_a_rule_made_from_wechat_is_confirmed_with_the_24_hour_sentence(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink, script: SessionScript
) -> None:
    words = "每天早上 8 点看看 X 的价格"
    schedule = {"kind": "daily", "time": "08:00", "tz": "Asia/Shanghai"}
    call = ToolCallSpec("rule_create", {"title": "看 X 价格", "instruction": words, "schedule": schedule})
    script.add("chat", [Reply.tool_calls([call]), Reply.text("已建好规则。")])
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        await connect_wechat(client, host)
        ilink.user_says(words)
        await sent_with(host, ilink, "已建好规则")
        [told] = [str(m["content"]) for m in script.requests["chat"][1]["messages"] if m["role"] == "tool"]
        assert text("zh", "channel_push.rule_window_note") in told  # the model is told to say it
        [rule] = (await client.get("/api/rules")).json()["rules"]
        [conversation] = [c for c in (await client.get("/api/conversations")).json()["conversations"]]
        assert rule["conversationId"] == conversation["id"]  # its results go to this WeChat chat
    await host.stop()


async def test_a_bare_number_still_answers_when_something_that_waited_goes_out_first(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink, script: SessionScript
) -> None:
    script.add("chat", start_task())
    script.add(
        TITLE,
        [
            report(
                "needs_you", "need the basis", question="包月价还是按小时价?", options=["包月价", "按小时价"]
            )
        ],
    )
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        bot, _ = await connect_wechat(client, host)
        await no_quiet_hours(client, bot)
        ilink.user_says("帮我比较一下 GPU 价格")
        await sent_with(host, ilink, "包月价还是按小时价?")
        [conversation] = await wechat_conversations(client)

        def held(s: Session) -> None:  # a rule's line that found no sends left after the question
            d, _ = delivery_rows.insert_delivery(
                s,
                id="r_x:rule",
                bot_id=bot,
                conversation_id=conversation["id"],
                purpose="rule",
                text="「天气」:明天有雨",
                now=0.0,
            )
            delivery_rows.reschedule(s, d.id, status="held", due_at=0.0, held_reason="quota")

        await host.db.write(held)
        script.add(TITLE, [report("done", "compared hourly", message="按小时价比较好了。")])
        ilink.user_says("2")
        assert (await sent_with(host, ilink, "你不在时")).startswith("你不在时:「天气」:明天有雨")
        assert await sent_with(host, ilink, "收到,") == f"收到,「{TITLE}」继续。"
        texts = [s.message.text for s in ilink.sent]
        away = next(n for n, said in enumerate(texts) if said.startswith("你不在时"))
        assert away < texts.index(f"收到,「{TITLE}」继续。")  # what waited went first
        assert len(script.requests["chat"]) == 2  # the "2" answered the question, not the chat agent
    await host.stop()
