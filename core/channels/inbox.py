"""Where a channel's stored messages become chat: one conversation per peer, on the channel's kind, owned by
the channel's bot, through the same human lane as the desktop (docs/channels.md#into-chat).

Handing the same stored message over twice (a crash between handing it over and marking it handled) gives
the message stored the first time: the chat pipeline keys it by `inbound:<channel>:<n>`.

Only the person who connected the channel (its owner: on WeChat, who scanned the code) talks to the bot:
anyone else's message is kept in the channel's store but never reaches chat, so a stranger who finds the
bot cannot make it work on this computer.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import ConversationsChanged
from core.channels.channel import cut
from core.chat.ports import InboundChat
from core.chat.service import MAX_TEXT
from core.clock import Clock
from core.errors import NotFoundError
from core.ids import new_id
from core.store import channels as channel_rows
from core.store import conversations as conv_rows
from core.store.channels import InboundRecord
from core.store.database import Database

log = logging.getLogger(__name__)

NOT_IN_CHAT = 0  # the message id a handed-over message gets when it stays out of chat
# What a message that holds no words (a picture, a file) says in the conversation until media is read.
NO_WORDS = "[{kinds}]"


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


class ChannelInbox:
    def __init__(self, db: Database, bus: EventBus, clock: Clock, chat: InboundChat) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._chat = chat

    async def hand_over(self, record: InboundRecord) -> int:
        """Give one stored message to chat, in its peer's conversation (made the first time the peer
        writes); the id of the chat message it became, or NOT_IN_CHAT for a stranger's message."""
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, record.channel_id))
        if channel is None:
            raise NotFoundError("channel", record.channel_id)
        if channel.owner and record.peer != channel.owner:
            log.info(
                "channel %s: a message from %s, who is not its owner, stays out of chat",
                channel.id,
                record.peer,
            )
            return NOT_IN_CHAT
        conversation_id = await self._conversation_of(record.channel_id, record.peer)
        # Cut, not refused: a message chat would refuse as too long would stay owed and be retried forever.
        words = cut(words_of(record.body), MAX_TEXT)
        message = await self._chat.say(
            conversation_id, words, source=f"inbound:{record.channel_id}:{record.id}"
        )
        return message.id

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
