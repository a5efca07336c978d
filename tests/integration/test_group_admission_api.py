"""A group chat a DingTalk bot was added to, through the real Host and its API: needs-you asks whether the
bot works there ([允许] [不允许]), answering it there or through the channel's group route records the
owner's word, and a bad request changes nothing (docs/channels.md#groups, docs/attention.md).

The channel row is stored as a connected DingTalk channel leaves it, without reaching a platform, and the
group is asked about as its first message would ask."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
from sqlalchemy.orm import Session

from core.host import Host
from core.ids import new_id
from core.store import channels as channel_rows
from core.store.models import ChannelPeerRow
from tests.integration.host_fixtures import running_api

GROUP = "cidAbC+/xyz=="  # an openConversationId: + / = in it
OTHER = "cidOther+Group/2=="


async def dingtalk_channel(host: Host, bot: str, groups: dict[str, str]) -> str:
    """A DingTalk channel of `bot` whose `groups` (id -> title) wait for the owner's word."""
    channel_id = new_id("ch")

    def store(s: Session) -> None:
        channel_rows.insert_channel(s, id=channel_id, bot_id=bot, kind="dingtalk", now=1.0)
        for n, (group, title) in enumerate(groups.items()):
            # The row its first message leaves (store_batch: when it wrote, the group's name), then asked.
            s.add(ChannelPeerRow(channel_id=channel_id, peer=group, title=title, last_inbound_at=100.0 + n))
            s.flush()
            assert channel_rows.ask_admission(s, channel_id, group)

    await host.db.write(store)
    return channel_id


async def first_bot(client: httpx.AsyncClient) -> dict[str, Any]:
    bot: dict[str, Any] = (await client.get("/api/bots")).json()["bots"][0]
    return bot


def group_rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in items if i["kind"] == "group_admission"]


def group_path(bot: str, channel: str, group: str) -> str:
    return f"/api/bots/{bot}/channels/{channel}/groups/{quote(group, safe='')}"


async def admissions(client: httpx.AsyncClient, bot: str, channel: str) -> dict[str, str]:
    view = (await client.get(f"/api/bots/{bot}/channels/{channel}")).json()
    return {g["id"]: g["admission"] for g in view["groups"]}


async def test_needs_you_asks_about_the_group_and_allow_admits_it(host: Host) -> None:
    async with running_api(host) as client:
        bot = await first_bot(client)
        channel = await dingtalk_channel(host, bot["id"], {GROUP: "测试群"})

        zh = group_rows((await client.get("/api/attention", params={"lang": "zh"})).json()["items"])
        [row] = zh
        assert row["subject"] == f"{bot['name']} 被拉进了群「测试群」,要在这个群里工作吗?"
        assert row["actions"] == ["approve", "deny"] and row["botId"] == bot["id"]
        assert GROUP not in row["id"]
        [en] = group_rows((await client.get("/api/attention", params={"lang": "en"})).json()["items"])
        assert en["subject"] == f"{bot['name']} was added to the group “测试群”: work in this group?"
        assert en["id"] == row["id"]

        done = await client.post(f"/api/attention/{row['id']}/approve", json={})
        assert done.status_code == 200, done.text
        assert done.json() == {"done": "approve", "channelId": channel, "botId": bot["id"]}
        assert await admissions(client, bot["id"], channel) == {GROUP: "allowed"}
        assert group_rows((await client.get("/api/attention")).json()["items"]) == []
        again = await client.post(f"/api/attention/{row['id']}/approve", json={})
        assert again.status_code == 404


async def test_dont_allow_refuses_the_group_and_leaves_the_others_asked(host: Host) -> None:
    async with running_api(host) as client:
        bot = await first_bot(client)
        channel = await dingtalk_channel(host, bot["id"], {GROUP: "测试群", OTHER: ""})
        rows = group_rows((await client.get("/api/attention", params={"lang": "en"})).json()["items"])
        assert [r["subject"] for r in rows] == [
            f"{bot['name']} was added to the group “测试群”: work in this group?",
            f"{bot['name']} was added to a group: work in this group?",
        ]
        refused = await client.post(f"/api/attention/{rows[0]['id']}/deny", json={})
        assert refused.status_code == 200, refused.text
        assert await admissions(client, bot["id"], channel) == {GROUP: "refused", OTHER: "asked"}
        left = group_rows((await client.get("/api/attention")).json()["items"])
        assert [r["id"] for r in left] == [rows[1]["id"]]


async def test_the_group_route_records_the_word_and_can_change_it(host: Host) -> None:
    async with running_api(host) as client:
        bot = (await first_bot(client))["id"]
        channel = await dingtalk_channel(host, bot, {GROUP: "测试群"})
        before = (await client.get(f"/api/bots/{bot}/channels/{channel}")).json()
        assert before["groups"] == [{"id": GROUP, "title": "测试群", "admission": "asked"}]

        allowed = await client.put(group_path(bot, channel, GROUP), json={"admitted": True})
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["groups"] == [{"id": GROUP, "title": "测试群", "admission": "allowed"}]
        assert group_rows((await client.get("/api/attention")).json()["items"]) == []

        refused = await client.put(group_path(bot, channel, GROUP), json={"admitted": False})
        assert refused.status_code == 200, refused.text
        assert await admissions(client, bot, channel) == {GROUP: "refused"}


async def test_bad_requests_to_the_group_route_change_nothing(host: Host) -> None:
    async with running_api(host) as client:
        bot = (await first_bot(client))["id"]
        channel = await dingtalk_channel(host, bot, {GROUP: "测试群"})
        path = group_path(bot, channel, GROUP)
        for body, field in [
            ({}, "admitted"),
            ({"admitted": "yes"}, "admitted"),
            ({"admitted": 1}, "admitted"),
            ({"admitted": None}, "admitted"),
            ({"admitted": True, "group": GROUP}, "group"),
        ]:
            answer = await client.put(path, json=body)
            assert answer.status_code == 400, (body, answer.text)
            assert field in answer.text, (body, answer.text)
        unknown = await client.put(group_path(bot, channel, "cidNever+/Added=="), json={"admitted": True})
        assert unknown.status_code == 404, unknown.text
        elsewhere = await client.put(group_path(bot, "ch_000000000000", GROUP), json={"admitted": True})
        assert elsewhere.status_code == 404, elsewhere.text

        assert await admissions(client, bot, channel) == {GROUP: "asked"}
        [row] = group_rows((await client.get("/api/attention")).json()["items"])
        assert row["actions"] == ["approve", "deny"]


async def test_a_channel_without_groups_shows_an_empty_list(host: Host) -> None:
    async with running_api(host) as client:
        bot = (await first_bot(client))["id"]
        channel = new_id("ch")
        await host.db.write(
            lambda s: channel_rows.insert_channel(s, id=channel, bot_id=bot, kind="wechat", now=1.0)
        )
        listed = (await client.get(f"/api/bots/{bot}/channels")).json()["channels"]
        assert [c["groups"] for c in listed] == [[]]
