"""Connecting a bot to WeChat by QR code against a fake iLink server: the steps the window shows, a new
code when one expires (three in all), the verify code, and a token that goes to the keyring only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.bus import EventBus
from core.channels.wechat.ilink import ILinkClient
from core.channels.wechat.login import WeChatLogin, token_secret_name
from core.clock import FakeClock
from core.errors import InvalidInputError
from core.store import channels as channel_rows
from core.store.database import Database
from tests.channel_store import new_wechat_channel
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.secrets import MemorySecretStore


@pytest.fixture
async def ilink() -> AsyncIterator[FakeILink]:
    async with FakeILink(hold_s=0.1) as server:
        yield server


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=FakeClock())
    await database.open()
    yield database
    await database.close()


class Login:
    def __init__(self, db: Database, ilink: FakeILink, channel_id: str, secrets: MemorySecretStore) -> None:
        self.bus = EventBus()
        self.seen: list[str] = []
        self.client = ILinkClient(ilink.base_url)
        self.login = WeChatLogin(
            db, self.bus, FakeClock(), self.client, secrets, channel_id=channel_id, poll_gap_s=0
        )
        self.asked = asyncio.Event()  # set once the window would ask for the verify code
        self.bus.subscribe(self._changed)

    def _changed(self, _event: object) -> None:
        self.seen.append(self.login.progress.status)
        if self.login.progress.status == "need_verify_code":
            self.asked.set()


@pytest.fixture
async def channel_id(db: Database) -> str:
    return await new_wechat_channel(db)


async def test_a_scan_and_a_confirm_store_the_account_and_put_the_token_in_the_keyring_only(
    db: Database, ilink: FakeILink, channel_id: str
) -> None:
    secrets = MemorySecretStore()
    flow = Login(db, ilink, channel_id, secrets)
    try:
        assert await flow.login.run()
        assert flow.seen[0] == "wait" and "scanned" in flow.seen and flow.seen[-1] == "confirmed"
        assert flow.login.progress.qrcode_url.startswith(ilink.base_url)
        assert secrets.values == {token_secret_name(channel_id): ilink.token}
        channel = await db.read(lambda s: channel_rows.get_channel(s, channel_id))
        assert channel is not None
        assert (channel.account, channel.owner, channel.base_url) == (
            ilink.account_id,
            ilink.owner_id,
            ilink.base_url,
        )
        assert ilink.token not in repr(channel)  # the token is in no column
        assert flow.client.token == ilink.token  # ready to poll
    finally:
        await flow.client.close()


async def test_an_expired_code_is_replaced_and_after_three_the_login_fails_saying_why(
    db: Database, ilink: FakeILink, channel_id: str
) -> None:
    secrets = MemorySecretStore()
    ilink.qr_script = ["wait", "expired", "expired", "expired"]
    flow = Login(db, ilink, channel_id, secrets)
    try:
        assert not await flow.login.run()
        progress = flow.login.progress
        assert (progress.status, progress.codes) == ("failed", 3)
        assert "expired 3 times" in progress.reason
        assert secrets.values == {}
    finally:
        await flow.client.close()


async def test_the_second_code_can_still_be_confirmed(
    db: Database, ilink: FakeILink, channel_id: str
) -> None:
    ilink.qr_script = ["expired", "scaned", "confirmed"]
    flow = Login(db, ilink, channel_id, MemorySecretStore())
    try:
        assert await flow.login.run()
        assert flow.login.progress.codes == 2
    finally:
        await flow.client.close()


async def test_a_verify_code_is_asked_for_and_sent_with_the_next_poll(
    db: Database, ilink: FakeILink, channel_id: str
) -> None:
    ilink.qr_script = ["scaned", "need_verifycode", "confirmed"]
    flow = Login(db, ilink, channel_id, MemorySecretStore())
    try:
        running = asyncio.get_running_loop().create_task(flow.login.run())
        await asyncio.wait_for(flow.asked.wait(), 5)
        with pytest.raises(InvalidInputError):
            flow.login.enter_verify_code("48 21 x")  # refused: the login still waits for digits
        flow.login.enter_verify_code("4821")
        assert await asyncio.wait_for(running, 5)
        assert ilink.qr_polls[-1]["verify_code"] == "4821"
    finally:
        await flow.client.close()


async def test_a_redirect_moves_the_polls_to_the_host_it_names(
    db: Database, ilink: FakeILink, channel_id: str
) -> None:
    ilink.qr_script = ["scaned_but_redirect", "confirmed"]
    flow = Login(db, ilink, channel_id, MemorySecretStore())
    try:
        assert await flow.login.run()
        assert len(ilink.qr_polls) == 2
    finally:
        await flow.client.close()


async def test_without_a_keyring_the_login_fails_and_stores_nothing(
    db: Database, ilink: FakeILink, channel_id: str
) -> None:
    flow = Login(db, ilink, channel_id, MemorySecretStore(available=False))
    try:
        assert not await flow.login.run()
        assert "keyring" in flow.login.progress.reason
        channel = await db.read(lambda s: channel_rows.get_channel(s, channel_id))
        assert channel is not None and channel.account == ""
    finally:
        await flow.client.close()
