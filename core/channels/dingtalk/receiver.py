"""Receiving on a DingTalk channel (docs/channels.md#receiving-on-dingtalk): the stream's robot messages
stored before they are acked, then handed on in order; card button presses answered after the ack.

What arrives: every message of a one-to-one chat with the robot, and in a group only a message that
@-mentions it (DingTalk sends no other). Each is keyed by its msgId, so one that comes twice (over the old
and the new connection around a `disconnect`, or after a restart) is stored once. DingTalk keeps nothing
for a robot that was offline: what was written meanwhile is not pushed later, and there is no history to
read, so there is no catch-up (docs/channels.md#receiving-on-dingtalk says what this means for a person).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.channels.dingtalk.messages import DingTalkPress, MessageError, read_message, read_press
from core.channels.dingtalk.openapi import BOT_TOPIC, CARD_TOPIC, DingTalkApi
from core.channels.dingtalk.stream import StreamConnection
from core.channels.hand_on import HandOn, InboundSink
from core.channels.status import set_status
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.database import Database

log = logging.getLogger(__name__)

RETRY_S = 5.0  # a message that failed to reach chat is tried again after this (set aside after three)

# Takes a card button press, after DingTalk has its ack: (channel id, the app's API, the press).
PressHandler = Callable[[str, DingTalkApi, DingTalkPress], Awaitable[None]]


class DingTalkReceiver:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        sdk: ModuleType,
        api: DingTalkApi,
        *,
        channel_id: str,
        sink: InboundSink,
        presses: PressHandler | None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._sdk = sdk
        self._api = api
        self._channel_id = channel_id
        self._presses = presses
        self._hand_on = HandOn(db, bus, clock, channel_id=channel_id, sink=sink)
        self._bus = bus
        self._owed = asyncio.Event()
        self._pressing: set[asyncio.Task[None]] = set()
        self.connection = StreamConnection(api, clock, on_callback=self.take_callback, on_state=self._status)

    async def run(self) -> None:
        """Until cancelled: the stream, and the hand-on of what it stored."""
        self._owed.set()  # stored before a crash, not yet handed on
        handing = asyncio.get_running_loop().create_task(
            self._hand_on.keep_handing(self._owed, retry_s=RETRY_S)
        )
        try:
            await self.connection.run()
        finally:
            handing.cancel()
            for task in self._pressing:
                task.cancel()
            await asyncio.gather(handing, *self._pressing, return_exceptions=True)

    def wake(self) -> None:
        """Hand on what is owed now (a group the owner just allowed)."""
        self._owed.set()

    async def take_callback(self, topic: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """One callback of the stream; returns once what it brought is stored (then it is acked)."""
        if topic == BOT_TOPIC:
            try:
                arrival = read_message(self._sdk, data)
            except MessageError as exc:
                log.warning("dingtalk channel %s: a message was skipped: %s", self._channel_id, exc)
                return None
            now = self._clock.time()

            def write(s: Session) -> int:
                return len(channel_rows.store_batch(s, self._channel_id, [arrival], cursor="", now=now))

            if await self._db.write(write):
                self._owed.set()
            return None
        if topic == CARD_TOPIC:
            try:
                press = read_press(self._sdk, data)
            except MessageError as exc:
                log.warning("dingtalk channel %s: a card press was skipped: %s", self._channel_id, exc)
                return None
            if self._presses is not None:
                # After the ack: DingTalk waits only seconds for it, and a press takes as long as its action.
                task = asyncio.get_running_loop().create_task(self._press(press))
                self._pressing.add(task)
                task.add_done_callback(self._pressing.discard)
            return None
        log.info("dingtalk channel %s: a callback on %r was skipped", self._channel_id, topic)
        return None

    async def _press(self, press: DingTalkPress) -> None:
        assert self._presses is not None
        try:
            await self._presses(self._channel_id, self._api, press)
        except Exception:
            log.exception("dingtalk channel %s: a button press failed", self._channel_id)

    async def _status(self, status: str, reason: str) -> None:
        await set_status(self._db, self._bus, self._clock, self._channel_id, status, reason)
