"""Which channel a conversation lives on, and what that channel can do. Desktop now; the chat channels
(WeChat, Feishu, DingTalk, Telegram) register here when they come."""

from __future__ import annotations

from core.channels.channel import DESKTOP, DINGTALK, FEISHU, TELEGRAM, WECHAT, ChannelCapabilities

KNOWN: dict[str, ChannelCapabilities] = {
    caps.name: caps for caps in (DESKTOP, WECHAT, FEISHU, DINGTALK, TELEGRAM)
}
# Platforms whose messages go out through `ChannelSending`; a conversation of a platform not here yet keeps
# its pushes in the conversation, as the desktop does.
SENT_BY_PLATFORM: frozenset[str] = frozenset({WECHAT.name, FEISHU.name, DINGTALK.name, TELEGRAM.name})


def capabilities_of(channel: str) -> ChannelCapabilities:
    """The capabilities of a conversation's channel; an unknown name is treated as the desktop."""
    return KNOWN.get(channel, DESKTOP)
