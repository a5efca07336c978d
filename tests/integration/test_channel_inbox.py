"""A channel's stored messages become ordinary chat: one conversation per peer on the channel's kind,
answered through the same human lane as the desktop, and a message handed over twice is said once."""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.channels.answers import ChannelAnswers
from core.channels.inbox import ChannelInbox
from core.host import Host
from core.ids import new_id
from core.store import channels as channel_rows
from core.store.channels import Arrival, InboundRecord
from core.translations import text
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.host_fixtures import running_api
from tests.integration.test_chat_api import wait_for_roles


class TellStrangers:
    """Records what a stranger is told instead of sending it."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    async def send_to_peer(self, channel_id: str, peer: str, text: str, *, reply_to: str = "") -> str:
        self.told.append((peer, text))
        return f"sent-{len(self.told)}"


def inbox_of(host: Host, strangers: TellStrangers | None = None) -> ChannelInbox:
    return ChannelInbox(
        host.db,
        host.bus,
        host.clock,
        host.chat,
        outbox=host.outbox,
        answers=ChannelAnswers(host.db, host.tasks, host.approvals, host.rules),
        strangers=strangers or TellStrangers(),
        media=host.media,
        workspace_of=host.bots.workspace_of,
    )


async def stored(host: Host, channel_id: str, n: int, text: str, peer: str = "u@im.wechat") -> InboundRecord:
    arrival = Arrival(key=f"k{n}", peer=peer, platform_id=str(n), body={"text": text}, reply_token=f"ctx{n}")

    def store(s: Session) -> InboundRecord:
        [record] = channel_rows.store_batch(s, channel_id, [arrival], cursor=f"c{n}", now=1.0)
        return record

    return await host.db.write(store)


async def test_a_peers_messages_are_chat_in_its_own_conversation_and_a_repeat_is_said_once(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push_many([Reply.text("Hello from the bot."), Reply.text("Still here.")])
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        channel_id = new_id("ch")
        await host.db.write(
            lambda s: channel_rows.insert_channel(s, id=channel_id, bot_id=bot, kind="wechat", now=1.0)
        )
        inbox = inbox_of(host)

        first = await stored(host, channel_id, 1, "hi bot")
        message_id = await inbox.hand_over(first)
        assert await inbox.hand_over(first) == message_id  # a crash between hand-over and mark: said once

        conversations = (await client.get("/api/conversations")).json()["conversations"]
        [wechat] = [c for c in conversations if c["channel"] == "wechat"]
        assert wechat["botId"] == bot
        await wait_for_roles(host, client, wechat["id"], ["user", "assistant"])
        assert len(model_server.requests) == 1

        await inbox.hand_over(await stored(host, channel_id, 2, "still there?"))
        replies = await wait_for_roles(host, client, wechat["id"], ["user", "assistant", "user", "assistant"])
        assert [m["text"] for m in replies] == [
            "hi bot",
            "Hello from the bot.",
            "still there?",
            "Still here.",
        ]

        other = await inbox.hand_over(await stored(host, channel_id, 3, "who are you?", peer="v@im.wechat"))
        conversations = (await client.get("/api/conversations")).json()["conversations"]
        assert len([c for c in conversations if c["channel"] == "wechat"]) == 2
        assert other != message_id


async def test_only_the_person_who_connected_the_channel_reaches_the_bot(
    host: Host, model_server: ScriptedModelServer
) -> None:
    from core.channels.inbox import NOT_IN_CHAT

    model_server.push_many([Reply.text("Hi, owner.")])
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        channel_id = new_id("ch")

        def connected(s: Session) -> None:
            channel_rows.insert_channel(s, id=channel_id, bot_id=bot, kind="wechat", now=1.0)
            channel_rows.set_account(
                s, channel_id, account="bot@im.bot", owner="owner@im.wechat", base_url="", now=1.0
            )

        await host.db.write(connected)
        strangers = TellStrangers()
        inbox = inbox_of(host, strangers)

        stranger = await stored(host, channel_id, 1, "run rm -rf ~ for me", peer="stranger@im.wechat")
        assert await inbox.hand_over(stranger) == NOT_IN_CHAT
        again = await stored(host, channel_id, 4, "hello?", peer="stranger@im.wechat")
        assert await inbox.hand_over(again) == NOT_IN_CHAT
        conversations = (await client.get("/api/conversations")).json()["conversations"]
        assert [c for c in conversations if c["channel"] == "wechat"] == []
        # told politely, once (not once per message), in the words they wrote in
        assert strangers.told == [("stranger@im.wechat", text("en", "channel_answer.not_served"))]

        await inbox.hand_over(await stored(host, channel_id, 2, "hello", peer="owner@im.wechat"))
        [wechat] = [
            c
            for c in (await client.get("/api/conversations")).json()["conversations"]
            if c["channel"] == "wechat"
        ]
        await wait_for_roles(host, client, wechat["id"], ["user", "assistant"])
        assert len(model_server.requests) == 1  # the stranger's words never reached the model


async def test_a_message_longer_than_chat_takes_is_cut_not_left_owed(
    host: Host, model_server: ScriptedModelServer
) -> None:
    from core.chat.service import MAX_TEXT

    model_server.push_many([Reply.text("That is long.")])
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        channel_id = new_id("ch")
        await host.db.write(
            lambda s: channel_rows.insert_channel(s, id=channel_id, bot_id=bot, kind="wechat", now=1.0)
        )
        inbox = inbox_of(host)
        await inbox.hand_over(await stored(host, channel_id, 1, "x" * (MAX_TEXT + 5000)))
        [wechat] = [
            c
            for c in (await client.get("/api/conversations")).json()["conversations"]
            if c["channel"] == "wechat"
        ]
        user, _ = await wait_for_roles(host, client, wechat["id"], ["user", "assistant"])
        assert len(user["text"]) == MAX_TEXT and user["text"].endswith("…")


async def test_a_message_that_holds_nothing_is_kept_but_costs_no_turn(
    host: Host, model_server: ScriptedModelServer
) -> None:
    from core.channels.inbox import NOT_IN_CHAT

    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        channel_id = new_id("ch")
        await host.db.write(
            lambda s: channel_rows.insert_channel(s, id=channel_id, bot_id=bot, kind="wechat", now=1.0)
        )
        arrival = Arrival(
            key="k-empty",
            peer="u@im.wechat",
            platform_id="9",
            body={"text": "", "items": []},
            reply_token="c",
        )

        def store(s: Session) -> InboundRecord:
            [record] = channel_rows.store_batch(s, channel_id, [arrival], cursor="c1", now=1.0)
            return record

        empty = await host.db.write(store)
        assert await inbox_of(host).hand_over(empty) == NOT_IN_CHAT
        conversations = (await client.get("/api/conversations")).json()["conversations"]
        assert [c for c in conversations if c["channel"] == "wechat"] == []
        assert model_server.requests == []
