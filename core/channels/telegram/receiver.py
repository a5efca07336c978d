"""Receiving on a Telegram channel (docs/channels.md#receiving-on-telegram): getUpdates long polling on our
loop, each batch stored with the offset after it in one transaction, then handed on.

The offset is Telegram's cursor: asking from it confirms everything before it, which never comes back. So a
batch's messages and the offset after them are stored together before the next poll asks from there; a
crash before that asks from the old offset again and the dedupe keys drop what was stored. A button press
is taken once its batch's offset is stored: at most once, since a second late answer would resume a task
twice.

Pairing: until the bot has an owner, the first person to send `/start <code>` with the one-time code shown
in settings becomes it; anyone else is told how to pair, and their words never reach chat.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from core.bots.secret_store import SecretStore
from core.bus import EventBus
from core.changes import ChannelChanged
from core.channels.hand_on import HandOn, InboundSink
from core.channels.status import set_status
from core.channels.telegram.config import pairing_secret_name
from core.channels.telegram.fault import TelegramFault
from core.channels.telegram.updates import (
    TelegramMessage,
    TelegramPress,
    UpdateError,
    read_update,
    update_id_of,
)
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.channels import Arrival
from core.store.database import Database
from core.translations import text

if TYPE_CHECKING:
    from core.channels.telegram.api import TelegramApi

log = logging.getLogger(__name__)

RETRY_S = 2.0
BACKOFF_S = 30.0
FAILURES_BEFORE_BACKOFF = 3

PressHandler = Callable[[str, "TelegramApi", TelegramPress], Awaitable[None]]


class TelegramReceiver:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        api: TelegramApi,
        secrets: SecretStore,
        *,
        channel_id: str,
        sink: InboundSink,
        presses: PressHandler | None,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._api = api
        self._secrets = secrets
        self._channel_id = channel_id
        self._presses = presses
        self._hand_on = HandOn(db, bus, clock, channel_id=channel_id, sink=sink)
        self._shown = ""

    async def run(self) -> None:
        """Poll until cancelled, or until Telegram refuses the token."""
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, self._channel_id))
        if channel is None:
            return
        offset = int(channel.cursor) if channel.cursor.isdigit() else 0
        self._shown = channel.status
        await self._hand_on()  # stored before a crash, not yet handed on
        failures = 0
        while True:
            try:
                raw = await self._api.updates(offset)
            except TelegramFault as fault:
                if fault.token_refused:
                    await self._status("error", "Telegram refused the bot's token: give the token again")
                    return
                failures += 1
                log.warning(
                    "telegram channel %s: poll failed (%d in a row): %s", self._channel_id, failures, fault
                )
                if fault.retry_after:
                    await self._clock.sleep(fault.retry_after)
                elif failures >= FAILURES_BEFORE_BACKOFF:
                    await self._status("error", str(fault)[:300])
                    failures = 0
                    await self._clock.sleep(BACKOFF_S)
                else:
                    await self._clock.sleep(RETRY_S)
                continue
            failures = 0
            if self._shown != "connected":
                await self._status("connected", "")
            offset = await self._take(raw, offset)
            await self._hand_on()

    async def _take(self, raw: list[Any], offset: int) -> int:
        """Store what is ours in a batch and answer its presses; the offset after it."""
        arrivals: list[Arrival] = []
        presses: list[TelegramPress] = []
        after = offset
        for update in raw:
            update_id = update_id_of(update)
            if update_id is not None:
                after = max(after, update_id + 1)
            try:
                read = read_update(update)
            except UpdateError as exc:
                log.warning("telegram channel %s: an update was skipped: %s", self._channel_id, exc)
                continue
            if isinstance(read, TelegramPress):
                presses.append(read)
            elif isinstance(read, TelegramMessage) and not read.from_bot:
                if not await self._paired(read):
                    continue
                arrivals.append(_arrival(read))
        if after != offset or arrivals:
            now = self._clock.time()

            def store(s: Session) -> None:
                channel_rows.store_batch(s, self._channel_id, arrivals, cursor=str(after), now=now)

            await self._db.write(store)
        # Presses after the offset moved past them: a crash between the two loses a press (its spinner
        # stops, and the person presses again) rather than taking it twice (a late answer would resume
        # the task twice).
        for press in presses:
            if self._presses is not None:
                try:
                    await self._presses(self._channel_id, self._api, press)
                except Exception:
                    log.exception("telegram channel %s: a button press failed", self._channel_id)
        return after

    async def _paired(self, message: TelegramMessage) -> bool:
        """Whether the message goes on to chat: the bot has an owner (who it serves is the inbox's to say).
        Before that, `/start <code>` pairs its sender; anything else is answered with how to pair."""
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, self._channel_id))
        words = message.text.split()
        start = bool(words) and words[0].split("@")[0] == "/start"
        if channel is None or channel.owner:
            # The owner's own `/start` (their pairing message again after a crash before its offset was
            # stored, or the one Telegram sends when they open the bot) is no words for chat.
            return channel is None or not (start and str(message.sender) == channel.owner)
        code = await self._secrets.get(pairing_secret_name(self._channel_id))
        if code and start and len(words) == 2 and words[1] == code:
            now = self._clock.time()
            await self._db.write(
                lambda s: channel_rows.set_owner(s, self._channel_id, str(message.sender), now=now)
            )
            await self._secrets.delete(pairing_secret_name(self._channel_id))  # one time only
            self._bus.publish(ChannelChanged(self._channel_id))
            await self._say(message, _both("telegram.paired"))
            return False
        await self._say(message, _both("telegram.pair_first"))
        return False

    async def _say(self, message: TelegramMessage, words: str) -> None:
        try:
            await self._api.send(message.chat_id, words, reply_to=message.message_id)
        except TelegramFault as exc:
            log.warning("telegram channel %s: could not answer a pairing message: %s", self._channel_id, exc)

    async def _status(self, status: str, reason: str) -> None:
        self._shown = status
        await set_status(self._db, self._bus, self._clock, self._channel_id, status, reason)


def _both(key: str) -> str:
    """Words for someone whose language is not known yet (`/start 123456` says none): both."""
    return f"{text('zh', key)}\n{text('en', key)}"


def _arrival(message: TelegramMessage) -> Arrival:
    body: dict[str, Any] = {
        "text": message.text,
        "items": message.items,
        "sender": str(message.sender),
        "chat_type": "p2p" if message.chat_type == "private" else "group",
        "create_time_ms": message.date * 1000,
    }
    if message.reply_to:
        body["quote"] = {"svr_id": str(message.reply_to)}
    return Arrival(
        key=f"m:{message.chat_id}:{message.message_id}",
        peer=str(message.chat_id),
        platform_id=str(message.message_id),
        body=body,
        reply_token="",
    )
