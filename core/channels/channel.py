"""What a channel is to the outbox: its capabilities, the interface to send through it, and message shaping.

Desktop is the first channel; WeChat is the first chat platform. The attention-budget rules
(`core.delivery.policy`) read only `ChannelCapabilities`, and the outbox sends through `ChannelSending`, so a
new platform is a new constant plus a sender.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from core.translations import Language

# docs/push-rules.md#message-shape: every pushed message is one line, with an optional second line only for a
# blocker or a limit; we aim for at most 300 characters even where the channel takes more (WeChat takes
# 4,000).
SHAPE_MAX_CHARS = 300
SHAPE_MAX_LINES = 2
ELLIPSIS = "…"

# The only emoji a pushed message carries: ❓ for questions and ⚠️ (with or without the emoji variation
# selector) for failures. WeChat and Feishu need them as markers; the desktop UI strips them.
_MARKERS = re.compile("(?:\u2753|\u26a0\ufe0f?)[ \t]*")
_BLANKS = re.compile(r"[ \t\f\v\u00a0\u3000]+")


@dataclass(frozen=True, slots=True)
class ChannelCapabilities:
    name: str
    rings: bool
    """Whether a push makes a sound or a notification by itself: chat channels yes. The desktop conversation
    does not; there only the OS notification rings, which the outbox decides separately."""
    daily_cap: int | None
    """Unsolicited messages per conversation per local day; None for no cap."""
    supports_quote: bool
    """Whether the user can quote a pushed message to reply to it (how task questions are answered)."""
    max_chars: int
    """The most characters one message may have; a pushed message is never split."""
    strips_markers: bool
    """Whether ❓ and ⚠️ are removed before sending."""
    reply_window: bool = False
    """Whether the platform lets the bot write only for a while after the person wrote (WeChat's 24 h)."""
    text_hints: bool = False
    """Whether a push says in words how to answer it (numbered options, `y 4821`, "quote this"): where
    there are no buttons. Feishu's cards have them."""
    idempotent_sends: bool = False
    """Whether a send carries a key the platform dedupes by (Feishu's uuid): a send cut off by a crash can
    simply be sent again instead of asking the person whether it arrived."""


DESKTOP = ChannelCapabilities(
    "desktop", rings=False, daily_cap=None, supports_quote=True, max_chars=4000, strips_markers=True
)
# docs/push-rules.md#daily-cap: cap 3 per day; one WeChat message holds at most 4,000 characters.
WECHAT = ChannelCapabilities(
    "wechat",
    rings=True,
    daily_cap=3,
    supports_quote=True,
    max_chars=4000,
    strips_markers=False,
    reply_window=True,
    text_hints=True,
)
# docs/push-rules.md#daily-cap: cap 5 per day; results and questions are cards, whose request body Feishu
# limits to 30 KB (about 10,000 CJK characters at 3 bytes each).
FEISHU = ChannelCapabilities(
    "feishu",
    rings=True,
    daily_cap=5,
    supports_quote=True,
    max_chars=10_000,
    strips_markers=False,
    idempotent_sends=True,
)


# Telegram takes 4,096 characters a message; its buttons are inline keyboards, and quotes (replies) work.
TELEGRAM = ChannelCapabilities(
    "telegram",
    rings=True,
    daily_cap=5,
    supports_quote=True,
    max_chars=4096,
    strips_markers=False,
    text_hints=True,
)

# DingTalk: a text message takes 5,000 characters; questions, approvals and failures are cards with buttons,
# results are text a person can quote to follow up. A card shows the words without the hints (its buttons
# say it), a text push with them (a question without options is answered by quoting it). Sends carry no key
# DingTalk dedupes by, except cards'.
DINGTALK = ChannelCapabilities(
    "dingtalk",
    rings=True,
    daily_cap=5,
    supports_quote=True,
    max_chars=5000,
    strips_markers=False,
    text_hints=True,
)


CHANNEL_GONE = "channel_gone"
"""SendHeld's reason when the conversation's channel was removed: the outbox keeps the message on the
desktop instead of waiting for a channel that will not come back."""


class SendHeld(Exception):
    """The channel cannot take this message now; `reason` is the delivery's held reason (`window_closed`,
    `quota`, `channel_down`). The outbox keeps the message until the reason is gone."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class SendOutcomeUnknown(Exception):
    """The platform may or may not have the message (no answer, or one that cannot be read): it must not
    be sent again without the person's word."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """What a send carries besides its words, for platforms that shape messages themselves (Feishu's cards
    and threads). WeChat sends the words alone."""

    key: str
    """The deliveries it carries, joined: stable across retries and restarts (Feishu's idempotency key)."""
    purpose: str
    plain: str
    """The words before the text-only hints (numbered options, `y 4821`, the quote hint) were added."""
    task_id: str = ""
    rule_id: str = ""  # the rule that sent it, when every delivery in it came from that one rule
    question_id: str = ""  # the question or approval it asks
    message_id: int = 0  # our message it is (a chat reply's, stored before it went out)
    lines: tuple[str, ...] = ()  # a digest's, one per delivery in it
    away: bool = False  # what waited for the person to write: 「你不在时」
    lang: Language = "zh"  # the conversation's


@runtime_checkable
class ChannelSending(Protocol):
    """How the outbox reaches a conversation that lives on a chat platform (docs/channels.md#sending).
    Implementations own their connections, tokens and the platform's limits."""

    async def send(self, conversation_id: str, text: str, outgoing: Outgoing | None = None) -> str:
        """Send one message and return the platform's id of it (to match a quote of it later), once the
        platform confirmed it. SendHeld when it cannot go now; SendOutcomeUnknown when it may have gone;
        any other error is a failed attempt the outbox retries (`policy.retry_at`)."""
        ...


def strip_markers(text: str) -> str:
    """`text` without the ❓ and ⚠️ markers (and the blank that followed one)."""
    return _MARKERS.sub("", text)


def one_line(text: str) -> str:
    """All of `text` on one line: line breaks and runs of blanks become one space."""
    return " ".join(text.split())


def cut(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, ending in "…" when anything was cut."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    return text[: limit - 1].rstrip() + ELLIPSIS


def shape(text: str, caps: ChannelCapabilities) -> str:
    """A pushed message in our shape (docs/push-rules.md#message-shape): at most two lines (the first line,
    then everything else joined into the second), at most 300 characters (fewer if the channel takes fewer),
    cut with "…", and without ❓/⚠️ on a channel that strips them."""
    if caps.strips_markers:
        text = strip_markers(text)
    lines = [cleaned for raw in text.splitlines() if (cleaned := _BLANKS.sub(" ", raw).strip())]
    if len(lines) > SHAPE_MAX_LINES:
        lines = [*lines[: SHAPE_MAX_LINES - 1], " ".join(lines[SHAPE_MAX_LINES - 1 :])]
    return cut("\n".join(lines), min(SHAPE_MAX_CHARS, caps.max_chars))
