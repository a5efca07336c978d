"""Where a channel's stored messages become chat: one conversation per peer, on the channel's kind, owned by
the channel's bot, through the same human lane as the desktop (docs/channels.md#into-chat).

Handing the same stored message over twice (a crash between handing it over and marking it handled) gives
the message stored the first time: the chat pipeline keys it by `inbound:<channel>:<n>`.

Only the person who connected the channel (its owner: on WeChat, who scanned the code) and the people the
owner allowed talk to the bot: anyone else's message is kept in the channel's store but never reaches chat,
so a stranger who finds the bot cannot make it work on this computer. They are told so, once a day.

Before a message becomes chat it may answer an open question or approval, follow up a task whose result it
quotes, or be `/tasks` (`ChannelAnswers`); then it is stored as said, starts no chat turn, and the bot's
one-line answer goes out as a reply.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import AttentionChanged, ChannelChanged, ConversationsChanged
from core.channels.answers import ChannelAnswers
from core.channels.channel import cut
from core.channels.registry import capabilities_of
from core.channels.wechat.frames import MediaRef
from core.channels.wechat.media import MediaError
from core.chat.ports import InboundChat
from core.chat.service import MAX_TEXT
from core.chat.views import MessageView
from core.clock import Clock
from core.errors import NotFoundError
from core.ids import new_id
from core.store import channels as channel_rows
from core.store import conversations as conv_rows
from core.store import messages as msg_rows
from core.store.channels import WAITING, ChannelRecord, InboundRecord
from core.store.database import Database
from core.store.deliveries import DeliveryPurpose
from core.tasks.language import language_of
from core.translations import Language, text

log = logging.getLogger(__name__)

NOT_IN_CHAT = 0  # the message id a handed-over message gets when it stays out of chat
# Platforms whose groups the bot works in only once the owner admitted them (docs/channels.md#groups).
ADMITTED_GROUPS = frozenset({"dingtalk"})
INBOX = "inbox"  # where attachments that came in are kept, per conversation, in the bot's workspace
REFUSE_EVERY_S = 24 * 3600.0  # someone the bot does not serve is told so at most once a day
STALE_AFTER_S = 600.0  # a message this old when it reaches chat is answered with its age
# What a message that holds no words (a picture, a file) says in the conversation until media is read.
NO_WORDS = "[{kinds}]"


def age_words(age_s: float, lang: Language) -> str:
    """How long ago, in whole minutes, hours or days: 「2 小时」, "2 hours"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if age_s >= size:
            n = int(age_s // size)
            return text(lang, f"channel_answer.age_{unit}", n=str(n))
    return text(lang, "channel_answer.age_minute", n="1")


def words_of(body: dict[str, Any]) -> str:
    """A stored message's words; for one with none, what it carried (`[image]`, `[file a.pdf]`)."""
    text = str(body.get("text") or "").strip()
    if text:
        return text
    kinds = []
    for item in body.get("items") or []:
        if isinstance(item, dict):
            media = item.get("media") or {}
            name = media.get("file_name") if isinstance(media, dict) else ""
            kinds.append(f"{item.get('kind', 'other')} {name}".strip())
    return NO_WORDS.format(kinds=", ".join(kinds) or "empty message")


class InboxOutbox(Protocol):
    """The Outbox, as the inbox uses it."""

    async def flush(self) -> int:
        """Send what may go now: a peer who wrote opened the way for what waited for them."""
        ...

    async def push(
        self,
        *,
        delivery_id: str,
        bot_id: str,
        conversation_id: str,
        purpose: DeliveryPurpose,
        text: str,
        task_id: str = "",
        run_id: str = "",
    ) -> bool: ...

    async def queue_nudge(self, conversation_id: str, bot_id: str, window_start: float) -> None: ...


class StrangerReply(Protocol):
    async def send_to_peer(self, channel_id: str, peer: str, text: str, *, reply_to: str = "") -> str:
        """One line straight to a peer who has no conversation here (ChannelSends)."""
        ...


class MediaSaver(Protocol):
    async def fetch(self, ref: MediaRef, kind: str, dest_dir: Path, *, stem: str) -> Path:
        """Download and decrypt one attachment into `dest_dir` (MediaFetcher); MediaError says why not."""
        ...


class PlatformMediaSaver(Protocol):
    async def fetch(
        self, channel_id: str, message_id: str, media: dict[str, Any], dest_dir: Path, *, stem: str
    ) -> Path:
        """Fetch one attachment of a Feishu or Telegram message into `dest_dir` with the channel's own
        credentials (PlatformMedia); MediaError says why not."""
        ...


class ChannelInbox:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        chat: InboundChat,
        *,
        outbox: InboxOutbox,
        answers: ChannelAnswers,
        strangers: StrangerReply,
        media: MediaSaver,
        workspace_of: Callable[[str], Path],
        platform_media: PlatformMediaSaver | None = None,
    ) -> None:
        self._platform_media = platform_media
        self._media = media
        self._workspace_of = workspace_of
        self._outbox = outbox
        self._answers = answers
        self._strangers = strangers
        self._db = db
        self._bus = bus
        self._clock = clock
        self._chat = chat

    async def hand_over(self, record: InboundRecord) -> int:
        """Give one stored message to chat, in its peer's conversation (made the first time the peer
        writes), unless it answers a question, follows up a task or is a command; the id of the chat
        message it became, or NOT_IN_CHAT for the message of someone the bot does not serve."""
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, record.channel_id))
        if channel is None:
            raise NotFoundError("channel", record.channel_id)
        # On WeChat the peer is the person; on Feishu it is the chat, and the person is its sender.
        who = str(record.body.get("sender") or record.peer)
        in_group = record.body.get("chat_type") == "group"
        if not channel.owner and channel.kind in ("feishu", "dingtalk") and not in_group:
            channel = await self._claim(channel, who)
        if in_group and channel.kind in ADMITTED_GROUPS:
            held = await self._held_for_admission(record)
            if held is not None:
                return held
        if not channel.admits(who) or (in_group and not channel.owner):
            await self._turn_away(
                channel.id, who, words_of(record.body), chat=record.peer, message=record.platform_id
            )
            return NOT_IN_CHAT
        if not str(record.body.get("text") or "").strip() and not record.body.get("items"):
            log.info("channel %s: message %s holds nothing; not handed to chat", channel.id, record.key)
            return NOT_IN_CHAT
        conversation_id = await self._conversation_of(record.channel_id, record.peer)
        source = f"inbound:{record.channel_id}:{record.id}"
        earlier = await self._chat.said_before(conversation_id, source)
        if earlier is not None:  # handed over before a crash: dealt with then
            await self._keep_ref(earlier.id, record.platform_id)
            return earlier.id
        # Cut, not refused: a message chat would refuse as too long would stay owed and be retried forever.
        words = cut(await self._words(record, channel.bot_id, conversation_id), MAX_TEXT)
        quote = record.body.get("quote") or {}
        quoted_ref = str(quote.get("svr_id") or "") if isinstance(quote, dict) else ""
        found = await self._answers.context(conversation_id, quoted_ref)
        root = str(quote.get("root_id") or "") if isinstance(quote, dict) else ""
        if root and root != quoted_ref and found.quoted_task is None and found.quoted_withdrawn is None:
            # Feishu: a reply deeper in the chain under a task's request, or under its result, goes there too.
            under_root = await self._answers.context(conversation_id, root)
            if under_root.quoted_task is not None:
                found = replace(found, quoted_task=under_root.quoted_task)
        # What waited for this peer to write goes first, as one 「你不在时:…」, before the reply to this. An
        # outbox that fails here must not set the person's message aside. Only a platform with a reply
        # window holds messages until the person writes (on Feishu this would cost every message a flush).
        try:
            if capabilities_of(channel.kind).reply_window:
                await self._outbox.flush()
                await self._queue_nudge(record, channel.bot_id, conversation_id)
        except Exception:
            log.exception("channel %s: the outbox failed before message %s", channel.id, record.key)
        noted: list[MessageView] = []

        async def commit() -> bool:
            view, new = await self._chat.note(conversation_id, words, source=source)
            noted.append(view)
            return new

        handled = await self._answers.handle(
            found,
            bot_id=channel.bot_id,
            words=words,
            quoted_ref=quoted_ref,
            owner=not channel.owner or who == channel.owner,
            commit=commit,
        )
        if handled is None:
            message = await self._chat.say(conversation_id, words, source=source)
            await self._keep_ref(message.id, record.platform_id)
            if channel.kind == "feishu":  # WeChat's queue holds nothing old: it is read as it comes
                await self._say_age(record, channel.bot_id, conversation_id, words)
            return message.id
        if not noted:  # dealt with without acting: still the person's words in the conversation
            await commit()
        await self._keep_ref(noted[0].id, record.platform_id)
        if handled.reply:
            await self._outbox.push(
                delivery_id=f"ack:{record.channel_id}:{record.id}",
                bot_id=channel.bot_id,
                conversation_id=conversation_id,
                purpose="reply",
                text=handled.reply,
            )
        return noted[0].id

    async def _held_for_admission(self, record: InboundRecord) -> int | None:
        """None when the owner admitted the message's group; else what the message becomes: WAITING for
        the owner's word (asked in needs-you the first time), or NOT_IN_CHAT in a refused group."""
        admission = await self._db.read(
            lambda s: channel_rows.admission_of(s, record.channel_id, record.peer)
        )
        if admission == "allowed":
            return None
        if admission == "refused":
            log.info(
                "channel %s: a message in refused group %s stays out of chat", record.channel_id, record.peer
            )
            return NOT_IN_CHAT
        first = await self._db.write(lambda s: channel_rows.ask_admission(s, record.channel_id, record.peer))
        if first:
            log.info("channel %s: added to group %s; asking the owner", record.channel_id, record.peer)
            self._bus.publish(ChannelChanged(record.channel_id))
            self._bus.publish(AttentionChanged())
        return WAITING

    async def _claim(self, channel: ChannelRecord, who: str) -> ChannelRecord:
        """A Feishu or DingTalk app's first one-to-one writer is its owner (WeChat's is who scanned the
        code): the person who connected the app writes to it first. The owner shows in the channel's
        settings."""
        now = self._clock.time()
        await self._db.write(lambda s: channel_rows.set_owner(s, channel.id, who, now=now))
        log.info("channel %s: %s wrote first and is its owner", channel.id, who)
        self._bus.publish(ChannelChanged(channel.id))
        return replace(channel, owner=who)

    async def _keep_ref(self, message_id: int, platform_id: str) -> None:
        """The person's message keeps the platform's id of it: a reply to it then finds it (and the task
        it started), and our answer is threaded under it."""
        if message_id and platform_id:
            await self._db.write(lambda s: msg_rows.set_channel_ref(s, message_id, platform_id))

    async def _say_age(self, record: InboundRecord, bot_id: str, conversation_id: str, words: str) -> None:
        """A message that waited (sent while Errand was off) is answered with its age, so the person knows
        the work starts now and not when they asked."""
        sent_ms = record.body.get("create_time_ms")
        if not isinstance(sent_ms, int) or sent_ms <= 0:
            return
        age = self._clock.time() - sent_ms / 1000
        if age < STALE_AFTER_S:
            return
        lang = language_of(words)
        await self._outbox.push(
            delivery_id=f"age:{record.channel_id}:{record.id}",
            bot_id=bot_id,
            conversation_id=conversation_id,
            purpose="reply",
            text=text(lang, "channel_answer.stale", age=age_words(age, lang)),
        )

    async def _queue_nudge(self, record: InboundRecord, bot_id: str, conversation_id: str) -> None:
        """This message opened a new reply window: its one nudge is due two hours before it closes, and
        decides then whether it is needed (core.delivery.window_nudge)."""
        peer = await self._db.read(lambda s: channel_rows.get_peer(s, record.channel_id, record.peer))
        if peer is None or peer.last_inbound_at <= 0:
            return
        await self._outbox.queue_nudge(conversation_id, bot_id, peer.last_inbound_at)

    async def _words(self, record: InboundRecord, bot_id: str, conversation_id: str) -> str:
        """The message's words, with each attachment saved in the conversation's `inbox/` folder of the
        bot's workspace and named by its path there, so the agent can open it (docs/channels.md#media).
        Names are stable per stored message, so handing it over again keeps one copy."""
        body = record.body
        parts = [said] if (said := str(body.get("text") or "").strip()) else []
        workspace = self._workspace_of(bot_id)
        folder = workspace / INBOX / conversation_id
        for n, item in enumerate(body.get("items") or []):
            media = item.get("media") if isinstance(item, dict) else None
            if not isinstance(media, dict):
                continue
            kind = str(item.get("kind") or "file")
            if "file_key" in media or "telegram_file" in media:  # fetched with the channel's own token
                if self._platform_media is None:
                    parts.append(f"[{kind} could not be fetched: attachments are not read here]")
                    continue
                try:
                    saved = await self._platform_media.fetch(
                        record.channel_id, record.platform_id, media, folder, stem=f"{record.id}-{n}"
                    )
                except MediaError as exc:
                    log.warning(
                        "channel %s: a %s of message %s: %s", record.channel_id, kind, record.key, exc
                    )
                    parts.append(f"[{kind} could not be fetched: {exc.reason}]")
                    continue
                parts.append(f"[{kind}: {saved.relative_to(workspace)}]")
                continue
            ref = MediaRef(
                encrypted_query_param=str(media.get("encrypted_query_param") or ""),
                aes_key=str(media.get("aes_key") or ""),
                full_url=str(media.get("full_url") or ""),
                file_name=str(media.get("file_name") or ""),
            )
            try:
                saved = await self._media.fetch(ref, kind, folder, stem=f"{record.id}-{n}")
            except MediaError as exc:
                log.warning("channel %s: a %s of message %s: %s", record.channel_id, kind, record.key, exc)
                parts.append(f"[{kind} could not be fetched: {exc.reason}]")
                continue
            parts.append(f"[{kind}: {saved.relative_to(workspace)}]")
        return "\n".join(parts) or words_of(body)

    async def _turn_away(self, channel_id: str, peer: str, words: str, *, chat: str, message: str) -> None:
        """Tell someone the bot does not serve so, once a day at most; their message stays out of chat."""
        log.info("channel %s: a message from %s, whom it does not serve, stays out of chat", channel_id, peer)
        now = self._clock.time()
        found = await self._db.read(lambda s: channel_rows.get_peer(s, channel_id, peer))
        if found is not None and now - found.refused_at < REFUSE_EVERY_S:
            return
        await self._db.write(lambda s: channel_rows.mark_refused(s, channel_id, peer, now=now))
        try:
            await self._strangers.send_to_peer(
                channel_id, chat, text(language_of(words), "channel_answer.not_served"), reply_to=message
            )
        except Exception as exc:  # a courtesy: it must not hold up the rest of the batch
            log.warning("channel %s: could not tell %s the bot is not theirs: %s", channel_id, peer, exc)
        self._bus.publish(ChannelChanged(channel_id))  # the owner may allow them in the channel's settings

    async def _conversation_of(self, channel_id: str, peer: str) -> str:
        now = self._clock.time()

        def find_or_make(s: Session) -> tuple[str, bool]:
            channel = channel_rows.get_channel(s, channel_id)
            if channel is None:
                raise NotFoundError("channel", channel_id)
            known = channel_rows.get_peer(s, channel_id, peer)
            if (
                known is not None
                and known.conversation_id
                and conv_rows.get_conversation(s, known.conversation_id)
            ):
                return known.conversation_id, False
            # Untitled: like a desktop chat, it is named after the peer's first words.
            made = conv_rows.insert_conversation(
                s, id=new_id("c"), bot_id=channel.bot_id, title="", now=now, channel=channel.kind
            )
            channel_rows.set_peer_conversation(s, channel_id, peer, made.id)
            return made.id, True

        conversation_id, made = await self._db.write(find_or_make)
        if made:
            self._bus.publish(ConversationsChanged())
        return conversation_id
