"""A button pressed under one of our Telegram messages (docs/channels.md#telegram-messages): always
answered (Telegram shows a spinner until it is), then the same needs-you action as the desktop, and the
message changed to say what was chosen, its buttons gone. Only the owner and the people allowed may press;
a press on something over says so."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from core.channels.button_actions import PressActions, PressTasks, press_data
from core.channels.telegram.fault import TelegramFault
from core.channels.telegram.updates import TelegramPress
from core.errors import ConflictError, ErrandError, NotFoundError
from core.store import channels as channel_rows
from core.store import messages as msg_rows
from core.store.database import Database
from core.tasks.language import language_of
from core.translations import Language, text

if TYPE_CHECKING:
    from core.channels.telegram.api import TelegramApi

log = logging.getLogger(__name__)


class TelegramPresses:
    def __init__(self, db: Database, actions: PressActions, tasks: PressTasks) -> None:
        self._db = db
        self._actions = actions
        self._tasks = tasks

    async def __call__(self, channel_id: str, api: TelegramApi, press: TelegramPress) -> None:
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        conversation = ""
        original = ""
        if channel is not None:
            peer = await self._db.read(lambda s: channel_rows.get_peer(s, channel_id, str(press.chat_id)))
            conversation = peer.conversation_id if peer is not None else ""
        if conversation:
            found = await self._db.read(
                lambda s: msg_rows.find_by_channel_ref(s, conversation, str(press.message_id))
            )
            original = found.text if found is not None else ""
        lang: Language = language_of(original)
        if channel is None or (channel.owner and not channel.admits(str(press.sender))):
            await self._answer(api, press, text(lang, "channel_press.not_yours"))
            return
        try:
            said, chosen = await press_data(self._db, self._actions, self._tasks, press.data, lang)
        except (NotFoundError, ConflictError):
            said, chosen = text(lang, "channel_press.gone"), ""
        except ErrandError as exc:
            said, chosen = str(exc), ""
        await self._answer(api, press, said)
        if chosen and original:
            try:
                await api.settle_message(press.chat_id, press.message_id, f"{original}\n\n{chosen}")
            except TelegramFault as exc:  # the action was taken; only the buttons stay
                log.info(
                    "telegram channel %s: could not update message %s: %s", channel_id, press.message_id, exc
                )

    @staticmethod
    async def _answer(api: TelegramApi, press: TelegramPress, words: str) -> None:
        try:
            await api.answer_press(press.id, words)
        except TelegramFault as exc:
            log.info("telegram: could not answer press %s: %s", press.id, exc)
