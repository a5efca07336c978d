"""What the UI and the API are shown of a bot's chat channels (docs/channels.md#channels-of-a-bot): plain
records, importable without the channel machinery behind them, so the window can be built before the host is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LoginStatus = Literal["wait", "scanned", "need_verify_code", "confirmed", "failed"]
MAX_CODES = 3  # a login shows this many QR codes, one after another as each expires, before it gives up


@dataclass(frozen=True, slots=True)
class LoginProgress:
    """Where a WeChat QR login is (docs/channels.md#login)."""

    status: LoginStatus
    qrcode_url: str = ""  # what the QR image encodes
    codes: int = 0  # how many codes were shown so far
    reason: str = ""  # why it failed


@dataclass(frozen=True, slots=True)
class ChannelGroup:
    """A group chat the bot was added to (DingTalk): it works there only once the owner admitted it."""

    id: str  # the platform's id of the group (DingTalk: its openConversationId)
    title: str
    admission: str  # asked | allowed | refused


@dataclass(frozen=True, slots=True)
class ChannelView:
    id: str
    bot_id: str
    kind: str
    account: str
    owner: str
    # connecting (a login under way, or before the first poll) | connected | reconnecting (Feishu: the
    # long connection dropped and is being made again) | unhealthy (Feishu: connected, but catch-up found
    # messages the connection never delivered) | login_expired | error
    status: str
    reason: str
    login: LoginProgress | None  # while a QR login is under way (or just ended)
    allowed: tuple[str, ...] = ()  # who besides the owner may use the bot here
    strangers: tuple[str, ...] = ()  # who wrote and was told the bot is not theirs, the latest first
    name: str = ""  # the bot's name on the platform, where it has one of its own (a Feishu app's bot)
    domain: str = ""  # Feishu: "feishu" or "lark"
    pairing_code: str = ""  # Telegram, until someone paired: what the owner sends as `/start <code>`
    groups: tuple[ChannelGroup, ...] = ()  # DingTalk: the groups it was added to, the latest first
