"""Receiving on a Feishu channel (docs/channels.md#receiving-on-feishu): the long connection's events stored
before they are acked, catch-up on every connect, and the stored messages handed on in order.

What is taken: every message in a one-to-one chat, and in a group only a message that @-mentions the bot
(its placeholder stripped). Our own messages and other apps' are never taken. Each is keyed by its message
id, so an event Feishu pushes again, the same message found by catch-up, or both after a restart, is stored
once. A button pressed on one of our cards is answered at once (Feishu waits 3 s at most) by `presses`.

Health: a connection that looks up can still have stopped delivering. Every HEALTH_EVERY_S the history is
read as on a connect; a message found there that is older than HEALTH_GRACE_S and was written while the
socket was up should have come through it, so the channel says `unhealthy` and connects again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.channels.feishu.catch_up import CatchUpResult, catch_up
from core.channels.feishu.config import FeishuApp
from core.channels.feishu.connection import LongConnection
from core.channels.feishu.events import (
    CARD_PRESSED,
    MESSAGE_RECEIVED,
    CardPress,
    EventError,
    FeishuMessage,
    card_press_of,
    flatten,
    message_of,
    parse_envelope,
)
from core.channels.feishu.rest import FeishuRest
from core.channels.feishu.sdk import Sdk
from core.channels.hand_on import HandOn, InboundSink
from core.channels.status import set_status
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.channels import Arrival, InboundRecord
from core.store.database import Database

log = logging.getLogger(__name__)

HEALTH_EVERY_S = 600.0
RETRY_S = 5.0  # a message that failed to reach chat is tried again after this (set aside after three)
HEALTH_GRACE_S = 60.0
NO_HISTORY = (
    "catch-up could not read some chats: it needs im:message.history:readonly (and im:message.group_msg for "
    "groups); messages sent there while Errand was off are not read"
)

# Answers a card press within Feishu's 3 s: the toast (and card) to show the person who pressed.
PressHandler = Callable[[str, CardPress], Awaitable[dict[str, Any]]]


def dedupe_key(message_id: str) -> str:
    return f"m:{message_id}"


def _written_order(record: InboundRecord) -> tuple[int, int]:
    sent_ms = record.body.get("create_time_ms")
    return (sent_ms if isinstance(sent_ms, int) else 0, record.id)


class FeishuReceiver:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        sdk: Sdk,
        rest: FeishuRest,
        app: FeishuApp,
        base_url: str,
        *,
        channel_id: str,
        bot_open_id: str,
        sink: InboundSink,
        presses: PressHandler | None,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._rest = rest
        self._channel_id = channel_id
        self._bot = bot_open_id
        self._presses = presses
        self._hand_on = HandOn(db, bus, clock, channel_id=channel_id, sink=sink, order=_written_order)
        self._owed = asyncio.Event()
        # Set while no connect's catch-up is under way: what the socket brings meanwhile waits for the
        # older messages catch-up may still find, so the person's words reach chat in the order written.
        self._caught_up = asyncio.Event()
        self._caught_up.set()
        self._connected_at = 0.0
        self._told_no_history = False
        self._unhealthy = ""  # why, until the connection delivers again
        self.connection = LongConnection(
            sdk,
            app,
            base_url,
            clock,
            on_event=self.take_event,
            on_state=self._status,
            on_connected=self._on_connected,
        )

    async def run(self) -> None:
        """Until cancelled: the connection, and the hand-on of what it stored."""
        self._owed.set()  # stored before a crash, not yet handed on
        handing = asyncio.get_running_loop().create_task(
            self._hand_on.keep_handing(self._owed, retry_s=RETRY_S, ready=self._caught_up)
        )
        try:
            await self.connection.run()
        finally:
            handing.cancel()
            await asyncio.gather(handing, return_exceptions=True)

    # ---- events -------------------------------------------------------------------------------------

    async def take_event(self, payload: bytes) -> dict[str, Any] | None:
        """One event of the long connection; returns once it is stored (then it is acked)."""
        try:
            envelope = parse_envelope(payload)
        except EventError as exc:
            log.warning("feishu channel %s: a frame was skipped: %s", self._channel_id, exc)
            return None
        if envelope.event_type == MESSAGE_RECEIVED:
            try:
                message = message_of(envelope)
            except EventError as exc:
                log.warning("feishu channel %s: a message was skipped: %s", self._channel_id, exc)
                return None
            await self.store([message])
            if self._unhealthy:  # it delivers again
                self._unhealthy = ""
                await self._status("connected", "")
            return None
        if envelope.event_type == CARD_PRESSED:
            try:
                press = card_press_of(envelope)
            except EventError as exc:
                log.warning("feishu channel %s: a card press was skipped: %s", self._channel_id, exc)
                return {"toast": {"type": "error", "content": "?"}}
            if self._presses is None:
                return None
            return await self._presses(self._channel_id, press)
        log.info("feishu channel %s: an event of type %s was skipped", self._channel_id, envelope.event_type)
        return None

    async def store(self, messages: list[FeishuMessage]) -> list[FeishuMessage]:
        """Store what is ours to take; returns the messages that were new."""
        arrivals: list[tuple[Arrival, FeishuMessage]] = []
        for message in messages:
            arrival = self._arrival(message)
            if arrival is not None:
                arrivals.append((arrival, message))
        if not arrivals:
            return []
        now = self._clock.time()

        def write(s: Session) -> set[str]:
            stored = channel_rows.store_batch(
                s, self._channel_id, [a for a, _ in arrivals], cursor="", now=now
            )
            return {r.key for r in stored}

        new = await self._db.write(write)
        if new:
            self._owed.set()
        return [m for a, m in arrivals if a.key in new]

    def _wanted(self, message: FeishuMessage) -> bool:
        """Ours to take: a person's message, in a group only one that @-mentions the bot."""
        if message.from_app:
            return False
        return message.chat_type != "group" or message.mentions_bot(self._bot)

    def _arrival(self, message: FeishuMessage) -> Arrival | None:
        if not self._wanted(message):
            return None  # ours, another app's, or a group's other talk
        try:
            flat = flatten(message, self._bot)
        except EventError as exc:
            log.warning(
                "feishu channel %s: message %s was skipped: %s", self._channel_id, message.message_id, exc
            )
            return None
        body: dict[str, Any] = {
            "text": flat.text,
            "items": flat.items,
            "sender": message.sender,
            "chat_type": message.chat_type,
            "create_time_ms": message.create_time_ms,
        }
        if message.parent_id:
            body["quote"] = {"svr_id": message.parent_id, "root_id": message.root_id}
        if message.event_id:
            body["event_id"] = message.event_id
        return Arrival(
            key=dedupe_key(message.message_id),
            peer=message.chat_id,
            platform_id=message.message_id,
            body=body,
            reply_token="",
        )

    # ---- catch-up and health ------------------------------------------------------------------------

    async def _on_connected(self) -> None:
        self._connected_at = self._clock.time()
        self._caught_up.clear()
        try:
            await self.catch_up()
        except Exception:
            log.exception("feishu channel %s: catch-up failed", self._channel_id)
        finally:
            self._caught_up.set()
        while True:
            await self._clock.sleep(HEALTH_EVERY_S)
            await self.check_health()

    async def catch_up(self) -> CatchUpResult:
        result = await catch_up(
            self._db,
            self._clock,
            self._rest,
            channel_id=self._channel_id,
            take=self.store,
            wanted=self._wanted,
        )
        if result.forbidden and not self._told_no_history:
            self._told_no_history = True  # said once; the channel goes on without it
            log.warning("feishu channel %s: %s", self._channel_id, NO_HISTORY)
            await self._status("connected", NO_HISTORY)
        if result.taken:
            log.info("feishu channel %s: catch-up found %d messages", self._channel_id, len(result.taken))
        return result

    async def check_health(self) -> bool:
        """Read the history; False (and `unhealthy`, and a new connection) when it holds messages the
        connection should have brought."""
        since = self._connected_at
        result = await self.catch_up()
        cutoff = (self._clock.time() - HEALTH_GRACE_S) * 1000
        missed = [m for m in result.taken if since * 1000 <= m.create_time_ms <= cutoff]
        if not missed or not since:
            return True
        reason = f"connected, but {len(missed)} messages came only through catch-up; connecting again"
        log.warning("feishu channel %s: %s", self._channel_id, reason)
        self._unhealthy = reason
        await self._status("unhealthy", reason)
        await self.connection.reconnect()
        return False

    # ---- plumbing -----------------------------------------------------------------------------------

    async def _status(self, status: str, reason: str) -> None:
        if status in ("connected", "reconnecting") and self._unhealthy:  # not yet shown to deliver again
            status, reason = "unhealthy", self._unhealthy
        await set_status(self._db, self._bus, self._clock, self._channel_id, status, reason)
