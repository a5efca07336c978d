"""Handing a channel's stored messages to the chat pipeline, the same for every platform
(docs/channels.md#receiving): oldest first, each marked handled once chat has it. One that fails stays owed
and the others go on; past HAND_OVERS failures it is set aside for the person (needs-you: 重试 or 知道了)
instead of being retried for ever."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import AttentionChanged
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.channels import InboundRecord
from core.store.database import Database

log = logging.getLogger(__name__)

HAND_OVERS = 3  # failed hand-overs of one message before it is set aside for the person

# Hands one stored message to the chat pipeline; returns the id of our message it became. It must be
# idempotent by the record's id: a crash between handing a message on and marking it handled hands the same
# record on again after the restart, and it must then give the same message, not a second one.
InboundSink = Callable[[InboundRecord], Awaitable[int]]


class HandOn:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        *,
        channel_id: str,
        sink: InboundSink,
        order: Callable[[InboundRecord], Any] | None = None,
    ) -> None:
        """`order`: how stored messages line up when they were not stored in the order they were written
        (Feishu's catch-up stores an older message after a newer one the socket brought); by id else."""
        self._order = order
        self._db = db
        self._bus = bus
        self._clock = clock
        self._channel_id = channel_id
        self._sink = sink

    async def __call__(self) -> bool:
        """Hand every stored, unhandled message on, oldest first; whether one failed (and stays owed)."""
        owed = await self._db.read(lambda s: channel_rows.unhandled(s, self._channel_id))
        if self._order is not None:
            owed.sort(key=self._order)
        failed = False
        for record in owed:
            try:
                message_id = await self._sink(record)
            except Exception:
                log.exception("channel %s: handing on message %s failed", self._channel_id, record.key)
                await asyncio.shield(self._failed(record))
                failed = True
                continue
            # Shielded: a stop that lands here still marks what the pipeline already has.
            await asyncio.shield(self._handled(record, message_id))
        return failed

    async def keep_handing(
        self, owed: asyncio.Event, *, retry_s: float, ready: asyncio.Event | None = None
    ) -> None:
        """Until cancelled: hand on whenever `owed` is set (and `ready`, when given, is set too); after a
        failure, again `retry_s` later. For receivers that store on one task and hand on from another."""
        while True:
            await owed.wait()
            if ready is not None:
                await ready.wait()
            owed.clear()
            try:
                failed = await self()
            except Exception:  # the store itself: tried again, not given up until a restart
                log.exception("channel %s: handing on failed", self._channel_id)
                failed = True
            if failed:
                await self._clock.sleep(retry_s)
                owed.set()

    async def _failed(self, record: InboundRecord) -> None:
        now = self._clock.time()

        def count(s: Session) -> bool:
            if channel_rows.count_failed_hand_over(s, record.id) < HAND_OVERS:
                return False
            channel_rows.set_aside(s, record.id, now=now)
            return True

        if await self._db.write(count):
            log.error(
                "channel %s: message %s set aside after %d tries", self._channel_id, record.key, HAND_OVERS
            )
            self._bus.publish(AttentionChanged())

    async def _handled(self, record: InboundRecord, message_id: int) -> None:
        now = self._clock.time()

        def mark(s: Session) -> None:
            channel_rows.mark_handled(s, record.id, message_id=message_id, now=now)

        await self._db.write(mark)
