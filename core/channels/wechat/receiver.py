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

import logging
from typing import Any

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.channels.hand_on import HandOn, InboundSink
from core.channels.status import set_status
from core.channels.wechat.frames import InboundMessage, dedupe_key
from core.channels.wechat.ilink import ILinkClient, ILinkError, SessionExpired
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.channels import Arrival
from core.store.database import Database

log = logging.getLogger(__name__)

RETRY_S = 2.0
BACKOFF_S = 30.0
FAILURES_BEFORE_BACKOFF = 3


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
        self._hand_on = HandOn(db, bus, clock, channel_id=channel_id, sink=sink)
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

    async def _store(self, arrivals: list[Arrival], cursor: str) -> None:
        now = self._clock.time()

        def store(s: Session) -> None:
            channel_rows.store_batch(s, self._channel_id, arrivals, cursor=cursor, now=now)

        await self._db.write(store)

    async def _status(self, status: str, reason: str) -> None:
        self._shown = status
        await set_status(self._db, self._bus, self._clock, self._channel_id, status, reason)
