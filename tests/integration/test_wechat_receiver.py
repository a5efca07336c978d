"""Receiving on a WeChat channel against a fake iLink server and a real SQLite file: every message is
stored before the cursor moves and handed on once, across redeliveries, crashes and restarts; a failing
platform is retried after 2 s and 30 s after three failures; an expired session stops the channel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from core.bus import EventBus
from core.changes import AttentionChanged, ChannelChanged
from core.channels.hand_on import HAND_OVERS
from core.channels.wechat.ilink import ILinkClient
from core.channels.wechat.receiver import BACKOFF_S, RETRY_S, WeChatReceiver
from core.clock import FakeClock
from core.store import channels as channel_rows
from core.store.channels import InboundRecord
from core.store.database import Database
from tests.channel_store import new_wechat_channel
from tests.fakes.fake_ilink import FakeILink
from tests.waiting import yield_until


class Sink:
    """The chat pipeline as the receiver sees it: records what it was handed, idempotent by the record's
    id as the receiver asks of it (`calls` keeps every call); can be told to fail."""

    def __init__(self) -> None:
        self.got: list[InboundRecord] = []
        self.refused: list[str] = []
        self.calls: list[int] = []
        self.fail_on: set[str] = set()
        self.arrived = asyncio.Event()

    async def __call__(self, record: InboundRecord) -> int:
        self.arrived.set()
        if record.body["text"] in self.fail_on:
            self.refused.append(record.body["text"])
            raise RuntimeError("the chat pipeline fell over")
        self.calls.append(record.id)
        known = [i for i, r in enumerate(self.got) if r.id == record.id]
        if not known:
            self.got.append(record)
        return 1000 + (known[0] if known else len(self.got) - 1)

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Until `condition` holds, re-checked each time a message is handed on."""
        async with asyncio.timeout(timeout):
            while not condition():
                self.arrived.clear()
                await self.arrived.wait()

    @property
    def texts(self) -> list[str]:
        return [r.body["text"] for r in self.got]


@pytest.fixture
async def ilink() -> AsyncIterator[FakeILink]:
    async with FakeILink(hold_s=0.1) as server:
        yield server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def db(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=clock)
    await database.open()
    yield database
    await database.close()


class Running:
    """A receiver running on its own task, as the host runs a channel; `stop()` cancels it."""

    def __init__(self, db: Database, clock: FakeClock, ilink: FakeILink, channel_id: str, sink: Sink) -> None:
        self.bus = EventBus()
        self.changes: list[object] = []
        self.bus.subscribe(self.changes.append)
        self.client = ILinkClient(ilink.base_url, token=ilink.token)
        self.receiver = WeChatReceiver(
            db, self.bus, clock, self.client, channel_id=channel_id, account=ilink.account_id, sink=sink
        )
        self.task = asyncio.get_running_loop().create_task(self.receiver.run())

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.client.close()


async def asleep_for(clock: FakeClock, seconds: float) -> None:
    """Until the receiver sleeps `seconds` on the fake clock (after a failed poll's HTTP round trip, so
    more rounds than a wait with no I/O needs)."""
    await yield_until(lambda: clock.sleeping_for(seconds), f"a sleep of {seconds} s", rounds=500_000)


async def status_of(db: Database, channel_id: str) -> tuple[str, str, str]:
    channel = await db.read(lambda s: channel_rows.get_channel(s, channel_id))
    assert channel is not None
    return channel.status, channel.status_reason, channel.cursor


async def test_messages_are_handed_on_in_order_once_and_the_channel_says_connected(
    db: Database, clock: FakeClock, ilink: FakeILink
) -> None:
    channel = await new_wechat_channel(db)
    sink = Sink()
    first = ilink.user_says("research Y")
    ilink.user_says("and Z", quote_of="900")
    running = Running(db, clock, ilink, channel, sink)
    try:
        await sink.wait_for(lambda: len(sink.got) == 2)
        assert sink.texts == ["research Y", "and Z"]
        assert sink.got[1].body["quote"]["svr_id"] == "900"
        ilink.redeliver(first["message_id"])  # at-least-once: the platform sends it again
        ilink.user_says("third")
        await sink.wait_for(lambda: len(sink.got) == 3)
        await ilink.wait_for_polls(4)
        assert sink.texts == ["research Y", "and Z", "third"]
        status, _, cursor = await status_of(db, channel)
        assert (status, cursor) == ("connected", "c4")
        assert ChannelChanged(channel) in running.changes
        peer = await db.read(lambda s: channel_rows.get_peer(s, channel, ilink.owner_id))
        assert peer is not None and peer.reply_token == ilink.log[-1]["context_token"]
    finally:
        await running.stop()


async def test_a_message_the_pipeline_could_not_take_is_handed_on_after_a_restart(
    db: Database, clock: FakeClock, ilink: FakeILink
) -> None:
    channel = await new_wechat_channel(db)
    sink = Sink()
    sink.fail_on = {"first"}
    ilink.user_says("first")
    ilink.user_says("second")
    running = Running(db, clock, ilink, channel, sink)
    await sink.wait_for(lambda: sink.texts == ["second"])
    await running.stop()  # the app goes away with "first" stored but not handed on

    sink.fail_on = set()
    restarted = Running(db, clock, ilink, channel, sink)
    try:
        await sink.wait_for(lambda: len(sink.got) == 2)
        assert sink.texts == ["second", "first"]
        polled = ilink.polls
        await ilink.wait_for_polls(polled + 2)  # past a whole poll of the restarted receiver
        assert sink.texts == ["second", "first"]  # the cursor was saved: nothing is read twice
        # "second" was marked handled as the app stopped, so only "first" was handed on again.
        assert sink.calls == [sink.got[0].id, sink.got[1].id]
    finally:
        await restarted.stop()


async def test_a_message_that_keeps_failing_is_set_aside_for_the_person_after_three_tries(
    db: Database, clock: FakeClock, ilink: FakeILink
) -> None:
    channel = await new_wechat_channel(db)
    sink = Sink()
    sink.fail_on = {"poison"}
    ilink.user_says("poison")
    running = Running(db, clock, ilink, channel, sink)
    try:
        await sink.wait_for(lambda: sink.refused == ["poison"] * HAND_OVERS)
        ilink.user_says("after it")
        await sink.wait_for(lambda: sink.texts == ["after it"])
        await ilink.wait_for_polls(ilink.polls + 2)
        assert sink.refused == ["poison"] * HAND_OVERS  # not tried again after every poll
        [aside] = await db.read(channel_rows.set_aside_messages)
        assert aside.body["text"] == "poison"
        assert AttentionChanged() in running.changes  # its needs-you row appears

        sink.fail_on = set()  # the person pressed 重试 once the cause was fixed
        assert await db.write(lambda s: channel_rows.settle_set_aside(s, aside.id, again=True))
        ilink.user_says("nudge a poll")
        await sink.wait_for(lambda: "poison" in sink.texts)
        assert await db.read(channel_rows.set_aside_messages) == []
    finally:
        await running.stop()


async def test_a_malformed_message_and_the_bots_own_messages_are_skipped_and_the_rest_arrive(
    db: Database, clock: FakeClock, ilink: FakeILink
) -> None:
    channel = await new_wechat_channel(db)
    sink = Sink()
    ilink.user_says("before")
    ilink.queue_raw({"message_id": "m-bad", "from_user_id": "u", "item_list": {"not": "a list"}})
    ilink.user_says("echo of our own reply", message_type=2)
    ilink.user_says("after")
    running = Running(db, clock, ilink, channel, sink)
    try:
        await sink.wait_for(lambda: len(sink.got) == 2)
        await ilink.wait_for_polls(2)
        assert sink.texts == ["before", "after"]
    finally:
        await running.stop()


async def test_a_failing_platform_is_polled_again_after_2_s_and_after_30_s_once_it_failed_three_times(
    db: Database, clock: FakeClock, ilink: FakeILink
) -> None:
    channel = await new_wechat_channel(db)
    sink = Sink()
    ilink.fail_next["getupdates"] = [500, "not-json", "ret"]
    ilink.user_says("still here")
    running = Running(db, clock, ilink, channel, sink)
    try:
        for _ in range(2):
            await asleep_for(clock, RETRY_S)
            clock.advance(RETRY_S)
        await asleep_for(clock, BACKOFF_S)
        status, reason, _ = await status_of(db, channel)
        assert status == "error" and "ret -1" in reason
        clock.advance(BACKOFF_S)
        await sink.wait_for(lambda: sink.texts == ["still here"])
        await ilink.wait_for_polls(2)  # the one that gave the message has been read
        assert (await status_of(db, channel))[0] == "connected"
    finally:
        await running.stop()


async def test_an_expired_session_stops_the_channel_as_login_expired(
    db: Database, clock: FakeClock, ilink: FakeILink
) -> None:
    channel = await new_wechat_channel(db)
    ilink.expire_session = True
    running = Running(db, clock, ilink, channel, Sink())
    try:
        await asyncio.wait_for(asyncio.shield(running.task), 5.0)
        status, reason, _ = await status_of(db, channel)
        assert status == "login_expired" and "-14" in reason
    finally:
        await running.stop()
