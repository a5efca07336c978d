"""A channel's status and its reason, as every channel's connection reports it
(docs/channels.md#channels-of-a-bot): stored, unless the channel was removed meanwhile, and announced so the
bot panel and settings re-read it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import ChannelChanged
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.database import Database


async def set_status(
    db: Database, bus: EventBus, clock: Clock, channel_id: str, status: str, reason: str = ""
) -> None:
    now = clock.time()

    def write(s: Session) -> None:
        if channel_rows.get_channel(s, channel_id) is not None:
            channel_rows.set_status(s, channel_id, status, reason=reason, now=now)

    await db.write(write)
    bus.publish(ChannelChanged(channel_id))
