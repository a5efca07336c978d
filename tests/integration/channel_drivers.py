"""One way to drive each chat channel's fake, so the same contract runs against every channel
(`test_channel_contract.py`): connect the channel (and become its owner), have the owner write one-to-one,
have the platform deliver the last message again, make the next send fail, and read what reached the
person. A new channel is an adapter, a fake and a driver here."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx

from core.channels.feishu.cards import check_card
from core.host import Host
from tests.fakes.fake_dingtalk import FakeDingTalk
from tests.fakes.fake_feishu import FakeFeishu
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.fake_telegram import FakeTelegram
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration import dingtalk_fixtures as dingtalk_kit
from tests.integration import feishu_fixtures as feishu_kit
from tests.integration import telegram_fixtures as telegram_kit
from tests.integration.wechat_fixtures import connect_wechat, wechat_host
from tests.waiting import wait_until


class Driver(Protocol):
    name: str

    def host(self, tmp_path: Path, model_server: ScriptedModelServer, home: Path) -> Host: ...

    async def connect(self, client: httpx.AsyncClient, host: Host) -> None:
        """Connect the channel and make the test's person its owner, quiet hours off."""
        ...

    async def owner_says(self, text: str) -> None: ...

    async def deliver_again(self) -> None:
        """The platform delivers the owner's last message once more (at-least-once delivery)."""
        ...

    def fail_next_send(self) -> None:
        """The next send is refused by the platform with a server error (it did not take it)."""
        ...

    async def choose(self, words: str, option: str) -> None:
        """The owner picks `option` of the question sent with `words`, the channel's own way: its button
        (Feishu, DingTalk, Telegram), or the option's number as a reply (WeChat)."""
        ...

    def delivered(self) -> list[str]:
        """The words of everything that reached the person, in order."""
        ...

    async def connect_refused(self, client: httpx.AsyncClient, host: Host) -> str:
        """Try to connect with credentials the platform refuses; what the person is told (an API error's
        message, or the channel's reason in settings)."""
        ...

    def secrets(self) -> dict[str, str]:
        """What the channel put in the keyring."""
        ...


async def _no_quiet_hours(client: httpx.AsyncClient) -> None:
    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
    r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
    assert r.status_code == 200, r.text


class WeChatDriver:
    name = "wechat"

    def __init__(self, fake: FakeILink) -> None:
        self.fake = fake
        self._secrets = MemorySecretStore()
        self._last = ""

    def host(self, tmp_path: Path, model_server: ScriptedModelServer, home: Path) -> Host:
        return wechat_host(tmp_path, model_server, home, self.fake, self._secrets)

    async def connect(self, client: httpx.AsyncClient, host: Host) -> None:
        await connect_wechat(client, host)
        await _no_quiet_hours(client)

    async def owner_says(self, text: str) -> None:
        self._last = str(self.fake.user_says(text)["message_id"])

    async def deliver_again(self) -> None:
        self.fake.redeliver(self._last)

    def fail_next_send(self) -> None:
        self.fake.fail_next.setdefault("sendmessage", []).append("ret")

    def delivered(self) -> list[str]:
        return [s.message.text for s in self.fake.sent]

    async def choose(self, words: str, option: str) -> None:
        [asked] = [said for said in self.delivered() if words in said]
        [number] = [line.split(".")[0] for line in asked.splitlines() if line.endswith(f". {option}")]
        await self.owner_says(number)

    async def connect_refused(self, client: httpx.AsyncClient, host: Host) -> str:
        self.fake.qr_script = ["wait", "expired", "expired", "expired"]  # WeChat's refusal: no scan
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "wechat"})
        assert r.status_code == 201, r.text
        channel = r.json()["id"]

        async def failed() -> bool:
            shown = (await client.get(f"/api/bots/{bot}/channels/{channel}")).json()
            return bool(shown["status"] == "error")

        await wait_until(host.bus, failed, timeout=20, what="the WeChat login failed")
        return str((await client.get(f"/api/bots/{bot}/channels/{channel}")).json()["reason"])

    def secrets(self) -> dict[str, str]:
        return dict(self._secrets.values)


class FeishuDriver:
    name = "feishu"

    def __init__(self, fake: FakeFeishu) -> None:
        self.fake = fake
        self._secrets = MemorySecretStore()
        self._last: dict[str, Any] = {}

    def host(self, tmp_path: Path, model_server: ScriptedModelServer, home: Path) -> Host:
        return feishu_kit.feishu_host(tmp_path, model_server, home, self.fake, self._secrets)

    async def connect(self, client: httpx.AsyncClient, host: Host) -> None:
        await feishu_kit.connect_feishu(client, host, self.fake)

    async def owner_says(self, text: str) -> None:
        self._last = self.fake.message_event(chat_id=feishu_kit.P2P, sender=feishu_kit.OWNER, text=text)
        await self.fake.push(self._last)

    async def deliver_again(self) -> None:
        await self.fake.push(self._last)  # the same event, re-pushed

    def fail_next_send(self) -> None:
        self.fake.fail_sends(1, status=500)

    def delivered(self) -> list[str]:
        return [feishu_kit.words_of(s) for s in self.fake.sent]

    async def choose(self, words: str, option: str) -> None:
        [card] = [s for s in self.fake.sent if words in feishu_kit.words_of(s)]
        value = dict(feishu_kit.buttons_of(card))[option]
        press = self.fake.card_action_event(
            operator=feishu_kit.OWNER, message_id=card.message_id, chat_id=feishu_kit.P2P, value=value
        )
        await self.fake.push(press)

    async def connect_refused(self, client: httpx.AsyncClient, host: Host) -> str:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        body = feishu_kit.app_of(self.fake, appSecret="not-the-secret")
        r = await client.post(f"/api/bots/{bot}/channels", json=body)
        assert r.status_code == 400, r.text
        return str(r.json()["error"]["message"])

    def secrets(self) -> dict[str, str]:
        return dict(self._secrets.values)


class TelegramDriver:
    name = "telegram"

    def __init__(self, fake: FakeTelegram) -> None:
        self.fake = fake
        self._secrets = MemorySecretStore()
        self._last: dict[str, Any] = {}
        self._host: Host | None = None

    def host(self, tmp_path: Path, model_server: ScriptedModelServer, home: Path) -> Host:
        self._host = telegram_kit.telegram_host(tmp_path, model_server, home, self.fake, self._secrets)
        return self._host

    async def connect(self, client: httpx.AsyncClient, host: Host) -> None:
        _bot, shown = await telegram_kit.connect(client, host, self.fake)
        await telegram_kit.pair(host, self.fake, shown["pairingCode"])

    async def owner_says(self, text: str) -> None:
        owner = telegram_kit.OWNER
        self._last = self.fake.user_says(chat_id=owner, user_id=owner, text=text)

    async def deliver_again(self) -> None:
        self.fake.queue_raw({"message": self._last})  # the same message in a new update

    def fail_next_send(self) -> None:
        self.fake.fail_sends(1, status=500)

    async def choose(self, words: str, option: str) -> None:
        [asked] = [s for s in self.fake.sent if words in s.text]
        assert asked.reply_markup is not None, asked
        [data] = [
            b["callback_data"]
            for row in asked.reply_markup["inline_keyboard"]
            for b in row
            if b["text"] == option
        ]
        owner = telegram_kit.OWNER
        self.fake.press(chat_id=owner, user_id=owner, message_id=asked.message_id, data=data)

    def delivered(self) -> list[str]:
        pairing = ("配对好了", "还没配对")
        return [s.text for s in self.fake.sent if not s.text.startswith(pairing)]

    async def connect_refused(self, client: httpx.AsyncClient, host: Host) -> str:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        wrong = "987654321:AAH-not-the-token-000000000000000000"
        r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "telegram", "token": wrong})
        assert r.status_code == 400, r.text
        return str(r.json()["error"]["message"])

    def secrets(self) -> dict[str, str]:
        return dict(self._secrets.values)


class DingTalkDriver:
    name = "dingtalk"

    def __init__(self, fake: FakeDingTalk) -> None:
        self.fake = fake
        self._secrets = MemorySecretStore()
        self._last: dict[str, Any] = {}

    def host(self, tmp_path: Path, model_server: ScriptedModelServer, home: Path) -> Host:
        return dingtalk_kit.dingtalk_host(tmp_path, model_server, home, self.fake, self._secrets)

    async def connect(self, client: httpx.AsyncClient, host: Host) -> None:
        await dingtalk_kit.connect(client, self.fake)  # the owner is who writes first, one-to-one

    async def owner_says(self, text: str) -> None:
        await self.fake.user_says(text, staff_id=dingtalk_kit.OWNER)
        self._last = copy.deepcopy(self.fake.frames_pushed[-1])

    async def deliver_again(self) -> None:
        # The same robot message (its msgId) in a new frame: over the next connection after a disconnect.
        again = copy.deepcopy(self._last)
        again["headers"]["messageId"] = f"{again['headers']['messageId']}-again"
        await self.fake.push_raw(again)

    def fail_next_send(self) -> None:
        self.fake.fail_sends(1, status=500)

    def delivered(self) -> list[str]:
        return [s.text if s.card is None else f"{s.text} {s.card}" for s in self.fake.sent]

    async def choose(self, words: str, option: str) -> None:
        [card] = [s for s in self.fake.sent if s.card is not None and words in str(s.card)]
        assert card.card is not None
        actions = [a for c in card.card["contents"] if c.get("type") == "action" for a in c["actions"]]
        [action] = [a["id"] for a in actions if a["label"]["text"] == option]
        await self.fake.press(card.card_biz_id, action, staff_id=dingtalk_kit.OWNER)

    async def connect_refused(self, client: httpx.AsyncClient, host: Host) -> str:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        body = dingtalk_kit.app_of(self.fake, appSecret="not-the-secret")
        r = await client.post(f"/api/bots/{bot}/channels", json=body)
        assert r.status_code == 400, r.text
        return str(r.json()["error"]["message"])

    def secrets(self) -> dict[str, str]:
        return dict(self._secrets.values)


@asynccontextmanager
async def driver_for(name: str) -> AsyncIterator[Driver]:
    """The channel's fake, running, and its driver."""
    if name == "wechat":
        async with FakeILink(hold_s=0.2) as ilink:
            ilink.qr_script = ["scaned", "confirmed"]
            yield WeChatDriver(ilink)
    elif name == "feishu":
        async with FakeFeishu(card_checker=check_card) as feishu:
            yield FeishuDriver(feishu)
    elif name == "dingtalk":
        async with FakeDingTalk() as dingtalk:
            yield DingTalkDriver(dingtalk)
    elif name == "telegram":
        async with FakeTelegram() as telegram:
            yield TelegramDriver(telegram)
    else:
        raise ValueError(f"no driver for {name!r}")


CHANNELS = ("wechat", "feishu", "dingtalk", "telegram")
