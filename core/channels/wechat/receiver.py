"""Receiving on a WeChat channel: the `getupdates` long poll, each batch stored before the cursor moves,
then handed on (docs/channels.md#receiving).

Order of work for every batch: store its new messages, the peers' reply tokens and the cursor after it in
one transaction; only then hand the stored messages to the chat pipeline, each marked handled once it has
it. A crash anywhere repeats a step, never loses a message: before the first poll of a start, whatever
was stored and not handled is handed on first. A message that fails to reach chat three times is set aside
for the person (needs-you: 重试 or 知道了) instead of being retried after every poll. The upstream plugin
saves the cursor first; we do not.

Errors: the next poll 2 s after a failure, 30 s after three in a row (then the channel says `error` with
the reason until a poll succeeds). An expired session (`-14`) ends the loop with the channel
`login_expired`: only a new QR scan brings it back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import AttentionChanged, ChannelChanged
from core.channels.wechat.frames import InboundMessage, dedupe_key
from core.channels.wechat.ilink import ILinkClient, ILinkError, SessionExpired
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.channels import Arrival, InboundRecord
from core.store.database import Database

log = logging.getLogger(__name__)

RETRY_S = 2.0
BACKOFF_S = 30.0
FAILURES_BEFORE_BACKOFF = 3
HAND_OVERS = 3  # failed hand-overs of one message before it is set aside for the person

# Hands one stored message to the chat pipeline; returns the id of our message it became. It must be
# idempotent by the record's id: a crash between handing a message on and marking it handled hands the same
# record on again after the restart, and it must then give the same message, not a second one.
InboundSink = Callable[[InboundRecord], Awaitable[int]]


def body_of(message: InboundMessage) -> dict[str, Any]:
    """What is kept of a message: its words, its items (media by CDN reference), what it quoted."""
    return {
        "text": message.text,
        "create_time_ms": message.create_time_ms,
        "items": [
            {
                "kind": item.kind,
                **({"text": item.text} if item.text else {}),
                **(
                    {
                        "media": {
                            "encrypted_query_param": item.media.encrypted_query_param,
                            "aes_key": item.media.aes_key,
                            "full_url": item.media.full_url,
                            "file_name": item.media.file_name,
                        }
                    }
                    if item.media is not None
                    else {}
                ),
            }
            for item in message.items
        ],
        "quote": (
            {"svr_id": message.quote.svr_id, "title": message.quote.title, "text": message.quote.text}
            if message.quote is not None
            else None
        ),
    }


class WeChatReceiver:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        client: ILinkClient,
        *,
        channel_id: str,
        account: str,
        sink: InboundSink,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._client = client
        self._channel_id = channel_id
        self._account = account
        self._sink = sink
        self.polls = 0
        self._shown = ""  # the status the channel has now

    async def run(self) -> None:
        """Poll until cancelled, or until the session expires."""
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, self._channel_id))
        if channel is None:
            return
        cursor = channel.cursor
        self._shown = channel.status
        await self._hand_on()  # stored before a crash, not yet handed on
        failures = 0
        while True:
            try:
                updates = await self._client.get_updates(cursor)
            except SessionExpired as exc:
                log.warning("wechat channel %s: %s", self._channel_id, exc)
                await self._status("login_expired", str(exc))
                return
            except ILinkError as exc:
                failures += 1
                log.warning(
                    "wechat channel %s: poll failed (%d in a row): %s", self._channel_id, failures, exc
                )
                if failures >= FAILURES_BEFORE_BACKOFF:
                    await self._status("error", str(exc))
                    failures = 0
                    await self._clock.sleep(BACKOFF_S)
                else:
                    await self._clock.sleep(RETRY_S)
                continue
            self.polls += 1
            failures = 0
            if self._shown != "connected":
                await self._status("connected", "")
            for refused in updates.refused:
                log.warning("wechat channel %s: skipped a message: %s", self._channel_id, refused)
            arrivals = [
                Arrival(
                    key=dedupe_key(self._account, message),
                    peer=message.from_user,
                    platform_id=message.message_id,
                    body=body_of(message),
                    reply_token=message.context_token,
                )
                for message in updates.messages
                if message.kind == "user"  # our own messages come back on the stream too
            ]
            if arrivals or updates.cursor:
                await self._store(arrivals, updates.cursor)
            if updates.cursor:
                cursor = updates.cursor
            await self._hand_on()

    async def _hand_on(self) -> None:
        """Hand every stored, unhandled message to the chat pipeline, oldest first. One that fails stays
        owed (it is tried again after the next poll) and the others go on."""
        for record in await self._db.read(lambda s: channel_rows.unhandled(s, self._channel_id)):
            try:
                message_id = await self._sink(record)
            except Exception:
                log.exception("wechat channel %s: handing on message %s failed", self._channel_id, record.key)
                await asyncio.shield(self._failed(record))
                continue
            # Shielded: a stop that lands here still marks what the pipeline already has.
            await asyncio.shield(self._handled(record, message_id))

    async def _store(self, arrivals: list[Arrival], cursor: str) -> None:
        now = self._clock.time()

        def store(s: Session) -> None:
            channel_rows.store_batch(s, self._channel_id, arrivals, cursor=cursor, now=now)

        await self._db.write(store)

    async def _failed(self, record: InboundRecord) -> None:
        """One more failed hand-over; past HAND_OVERS the message is set aside (a needs-you row) so it
        neither blocks the messages after it nor is retried after every poll for ever."""
        now = self._clock.time()

        def count(s: Session) -> bool:
            if channel_rows.count_failed_hand_over(s, record.id) < HAND_OVERS:
                return False
            channel_rows.set_aside(s, record.id, now=now)
            return True

        if await self._db.write(count):
            log.error(
                "wechat channel %s: message %s set aside after %d tries",
                self._channel_id,
                record.key,
                HAND_OVERS,
            )
            self._bus.publish(AttentionChanged())

    async def _handled(self, record: InboundRecord, message_id: int) -> None:
        now = self._clock.time()

        def mark(s: Session) -> None:
            channel_rows.mark_handled(s, record.id, message_id=message_id, now=now)

        await self._db.write(mark)

    async def _status(self, status: str, reason: str) -> None:
        self._shown = status
        now = self._clock.time()
        await self._db.write(
            lambda s: channel_rows.set_status(s, self._channel_id, status, reason=reason, now=now)
        )
        self._bus.publish(ChannelChanged(self._channel_id))
