"""The reads and commands the desktop UI uses for a bot's chat channels (docs/channels.md#channels-of-a-bot).
`ChannelService` implements it; UI tests fake it. The signatures mirror `core.channels.service.ChannelService`
exactly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from core.channels.app_check import AppCheck
from core.channels.views import ChannelView


class ChannelFacade(Protocol):
    async def of_bot(self, bot_id: str) -> list[ChannelView]:
        """The bot's channels with their status and, during a login, its progress. Raises NotFoundError
        for an unknown bot."""
        ...

    async def get(self, bot_id: str, channel_id: str) -> ChannelView:
        """One channel. Raises NotFoundError for an unknown bot or channel (or one of another bot)."""
        ...

    async def add(self, bot_id: str, kind: str, config: Mapping[str, object] | None = None) -> ChannelView:
        """A new channel of `kind`. WeChat ("wechat"): its QR login started; returns once the first code is
        there to show (or the login failed at once). Feishu ("feishu"): `config` is {"appId", "appSecret",
        "domain": "feishu" | "lark"}; DingTalk ("dingtalk"): {"appKey", "appSecret", "robotCode"}
        (robotCode may be left out: the AppKey); Telegram ("telegram"): {"token"}. The app is checked first
        (as `check_app`) and nothing is stored when that fails; returns once the channel is stored and its
        connection started. Raises InvalidInputError for an unknown kind, a bad field (its name in
        `field`: appId, appSecret, domain, appKey, robotCode, token), or credentials the platform refused
        (field appSecret, or token); UnavailableError when the platform cannot be reached."""
        ...

    async def check_app(self, kind: str, config: Mapping[str, object]) -> AppCheck:
        """测试连接: fetch a token with the app's credentials and read the bot's own name and id. Stores
        nothing. Raises as `add` does."""
        ...

    async def log_in_again(self, bot_id: str, channel_id: str) -> ChannelView:
        """A new QR login for a channel whose login expired or failed; returns like `add`."""
        ...

    def enter_verify_code(self, channel_id: str, code: str) -> None:
        """The digits the phone shows, while the login asks for them. Raises InvalidInputError("code")
        for anything but 4 to 8 digits, NotFoundError when the channel has no login under way."""
        ...

    async def remove(self, bot_id: str, channel_id: str) -> None:
        """Disconnect the channel and forget it: its stored messages, peers and token go too."""
        ...

    async def admit_group(self, bot_id: str, channel_id: str, group_id: str, *, allowed: bool) -> ChannelView:
        """The owner's word on a group the bot was added to (DingTalk): allowed, what waited there is handed
        on; refused, it is put away and the bot stays silent there. Returns the channel as it is then.
        Raises NotFoundError for an unknown bot, channel or group."""
        ...
