"""The Outbox: pushed messages (task results, failures) reach their conversation exactly once.

It is the one writer of `deliveries` (P3 §9). Ids are stable (`<run id>:result`), so asking twice is a no-op.
For a desktop conversation, storing the message and marking the delivery sent are one transaction: a crash
can neither lose a delivery nor send it twice. Channel rules (quiet hours, caps, WeChat's window) come with
the attention-budget issue; the desktop receives at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.clock import Clock
from core.events import ConversationsChanged, MessagesChanged
from core.store import conversations as conv_rows
from core.store import deliveries as delivery_rows
from core.store import messages as msg_rows
from core.store.database import Database
from core.store.deliveries import DeliveryPurpose, DeliveryRecord

log = logging.getLogger(__name__)

Delivered = Callable[[DeliveryRecord], Awaitable[None]]


class Outbox:
    def __init__(self, db: Database, bus: EventBus, clock: Clock) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._listeners: list[Delivered] = []

    def on_delivered(self, listener: Delivered) -> None:
        """Called after a delivery reached its conversation (e.g. to tell the chat session about it)."""
        self._listeners.append(listener)

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
    ) -> bool:
        """Queue a message and send it now. Returns False when this id was already queued (nothing new)."""
        now = self._clock.time()

        def insert(s: Session) -> bool:
            _, created = delivery_rows.insert_delivery(
                s,
                id=delivery_id,
                bot_id=bot_id,
                conversation_id=conversation_id,
                purpose=purpose,
                text=text,
                now=now,
                task_id=task_id,
                run_id=run_id,
            )
            return created

        created = await self._db.write(insert)
        if created:
            await self.flush()
        return created

    async def flush(self) -> int:
        """Send every due delivery; at start this finishes what a crash left pending. Returns how many."""
        now = self._clock.time()
        due = await self._db.read(lambda s: delivery_rows.pending_deliveries(s, now=now))
        sent = 0
        for delivery in due:
            if await self._send(delivery):
                sent += 1
        return sent

    async def _send(self, delivery: DeliveryRecord) -> bool:
        now = self._clock.time()

        def deliver(s: Session) -> bool:
            current = delivery_rows.get_delivery(s, delivery.id)
            if current is None or current.status != "pending":
                return False  # sent meanwhile (or dropped): never twice
            if conv_rows.get_conversation(s, delivery.conversation_id) is None:
                delivery_rows.set_delivery_status(s, delivery.id, "dropped", held_reason="conversation_gone")
                return False
            message = msg_rows.insert_message(
                s,
                conversation_id=delivery.conversation_id,
                role="error" if delivery.purpose == "failure" else "assistant",
                text=delivery.text,
                state="done",
                now=now,
                task_id=delivery.task_id,
            )
            delivery_rows.mark_sent(s, delivery.id, now=now, message_id=message.id)
            conv_rows.touch_conversation(s, delivery.conversation_id, now)
            return True

        try:
            if not await self._db.write(deliver):
                return False
        except Exception as exc:
            log.exception("delivery %s failed", delivery.id)
            error = str(exc)
            await self._db.write(lambda s: delivery_rows.mark_failed_attempt(s, delivery.id, error=error))
            return False
        self._bus.publish(MessagesChanged(delivery.conversation_id))
        self._bus.publish(ConversationsChanged())
        for listener in self._listeners:
            try:
                await listener(delivery)
            except Exception:
                log.exception("delivery listener failed for %s", delivery.id)
        return True
