"""Sending on a WeChat channel against a fake iLink server: with the peer's latest token, flattened, within
23 h of its last message and 9 sends per message; what cannot go is held with its reason and never reaches
the platform; a refusal holds everything until the peer writes again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from core.channels.channel import SendHeld
from core.channels.wechat.ilink import ILinkClient
from core.channels.wechat.sender import SENDS_PER_INBOUND, WINDOW_S, WeChatSender
from core.clock import FakeClock
from core.store import channels as channel_rows
from core.store.channels import Arrival
from core.store.database import Database
from tests.channel_store import new_wechat_channel
from tests.fakes.fake_ilink import FakeILink


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def ilink(clock: FakeClock) -> AsyncIterator[FakeILink]:
    async with FakeILink(hold_s=0.1, now=clock.time) as server:
        yield server


@pytest.fixture
async def db(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=clock)
    await database.open()
    yield database
    await database.close()


class Channel:
    """A stored WeChat channel, its sender, and a way to store what the peer wrote (as the receiver does)."""

    def __init__(self, db: Database, clock: FakeClock, ilink: FakeILink, channel_id: str) -> None:
        self.db, self.clock, self.ilink, self.id = db, clock, ilink, channel_id
        self.client = ILinkClient(ilink.base_url, token=ilink.token)
        self.sender = WeChatSender(db, clock, self.client, channel_id=channel_id)

    async def peer_says(self, text: str) -> dict[str, Any]:
        said = self.ilink.user_says(text)
        arrival = Arrival(
            key=f"k{said['message_id']}",
            peer=said["from_user_id"],
            platform_id=said["message_id"],
            body={"text": text},
            reply_token=said["context_token"],
        )
        now = self.clock.time()

        def store(s: Session) -> None:
            channel_rows.store_batch(s, self.id, [arrival], cursor="", now=now)

        await self.db.write(store)
        return said


@pytest.fixture
async def channel(db: Database, clock: FakeClock, ilink: FakeILink) -> AsyncIterator[Channel]:
    made = Channel(db, clock, ilink, await new_wechat_channel(db))
    yield made
    await made.client.close()


async def test_a_reply_goes_flattened_with_the_peers_latest_token(channel: Channel, ilink: FakeILink) -> None:
    await channel.peer_says("hi")
    latest = await channel.peer_says("research Y")
    message_id = await channel.sender.send(ilink.owner_id, "**Done**: see [the report](https://x.example)")
    [sent] = ilink.sent
    assert sent.message.text == "Done: see the report (https://x.example)"
    assert sent.message.context_token == latest["context_token"]
    assert message_id == sent.message_id


async def test_the_tenth_send_since_the_peer_wrote_is_held_before_it_reaches_the_platform(
    channel: Channel, ilink: FakeILink
) -> None:
    await channel.peer_says("go")
    for n in range(SENDS_PER_INBOUND):
        await channel.sender.send(ilink.owner_id, f"update {n}")
    with pytest.raises(SendHeld) as held:
        await channel.sender.send(ilink.owner_id, "one more")
    assert held.value.reason == "quota"
    assert len(ilink.sent) == SENDS_PER_INBOUND and ilink.refused_sends == []

    await channel.peer_says("ok")  # the peer writes: replies may go again
    await channel.sender.send(ilink.owner_id, "one more")
    assert ilink.sent[-1].message.text == "one more"


async def test_after_23_hours_of_silence_a_send_is_held_as_window_closed(
    channel: Channel, ilink: FakeILink, clock: FakeClock
) -> None:
    await channel.peer_says("go")
    clock.advance(WINDOW_S)
    with pytest.raises(SendHeld) as held:
        await channel.sender.send(ilink.owner_id, "late result")
    assert held.value.reason == "window_closed"
    assert ilink.sent == []
    assert not (await channel.sender.window(ilink.owner_id)).open


async def test_a_peer_who_never_wrote_cannot_be_sent_to(channel: Channel, ilink: FakeILink) -> None:
    with pytest.raises(SendHeld) as held:
        await channel.sender.send("stranger@im.wechat", "hello?")
    assert held.value.reason == "window_closed"
    assert ilink.sent == [] and ilink.refused_sends == []


async def test_a_refusal_from_the_platform_holds_every_later_send_until_the_peer_writes(
    channel: Channel, ilink: FakeILink
) -> None:
    ilink.sends_per_token = 2  # the platform allows fewer than we budget for
    await channel.peer_says("go")
    await channel.sender.send(ilink.owner_id, "one")
    await channel.sender.send(ilink.owner_id, "two")
    with pytest.raises(SendHeld):
        await channel.sender.send(ilink.owner_id, "three")
    assert len(ilink.refused_sends) == 1
    with pytest.raises(SendHeld) as held:
        await channel.sender.send(ilink.owner_id, "four")
    assert held.value.reason == "quota"
    assert len(ilink.refused_sends) == 1  # not retried in a loop: the platform was not asked again

    await channel.peer_says("still there?")
    await channel.sender.send(ilink.owner_id, "three")
    assert [s.message.text for s in ilink.sent] == ["one", "two", "three"]


async def test_a_long_message_is_cut_to_4000_characters_not_split(channel: Channel, ilink: FakeILink) -> None:
    await channel.peer_says("go")
    await channel.sender.send(ilink.owner_id, "x" * 5000)
    [sent] = ilink.sent
    assert len(sent.message.text) == 4000 and sent.message.text.endswith("…")
