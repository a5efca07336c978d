"""One message to a Telegram chat (docs/channels.md#telegram-messages): a reply under the person's message
it answers, a task's push under the request that started it; a question's options, an approval and a
failure with inline buttons under the words. A push is shaped to fit one message and never split; a chat
reply longer than Telegram's 4,096 characters goes as several, cut at paragraphs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from core.channels.channel import Outgoing
from core.channels.split import split_paragraphs
from core.channels.threads import reply_target
from core.store import approvals as approval_rows
from core.store.database import Database
from core.translations import text

if TYPE_CHECKING:
    from core.channels.telegram.api import TelegramApi

MAX_CHARS = 4096

Keyboard = list[list[dict[str, str]]]


def keyboard_of(s: Session, outgoing: Outgoing | None) -> Keyboard | None:
    """The buttons a push carries; callback data is at most 64 bytes (an id and an option's number)."""
    if outgoing is None:
        return None
    lang = outgoing.lang
    if outgoing.purpose == "failure" and outgoing.task_id:
        return [
            [
                {"text": text(lang, "telegram_button.retry"), "callback_data": f"r:{outgoing.task_id}"},
                {"text": text(lang, "telegram_button.stop"), "callback_data": f"s:{outgoing.task_id}"},
            ]
        ]
    asked = approval_rows.get_approval(s, outgoing.question_id) if outgoing.question_id else None
    if asked is None:
        return None
    if outgoing.purpose == "question" and asked.options:
        return [
            [{"text": option[:60], "callback_data": f"q:{asked.id}:{n}"}]
            for n, option in enumerate(asked.options)
        ]
    if outgoing.purpose == "approval":
        return [
            [
                {"text": text(lang, "telegram_button.approve"), "callback_data": f"y:{asked.id}"},
                {"text": text(lang, "telegram_button.deny"), "callback_data": f"n:{asked.id}"},
            ]
        ]
    return None


class TelegramSender:
    def __init__(self, db: Database, api: TelegramApi) -> None:
        self._db = db
        self._api = api

    async def send(self, conversation_id: str, chat_id: str, words: str, outgoing: Outgoing | None) -> str:
        def read(s: Session) -> tuple[str, Keyboard | None]:
            return reply_target(s, conversation_id, outgoing), keyboard_of(s, outgoing)

        target, keyboard = await self._db.read(read)
        reply_to = int(target) if target.isdigit() else 0
        pieces = (
            split_paragraphs(words, MAX_CHARS)
            if outgoing is None or outgoing.purpose == "reply"
            else [words[:MAX_CHARS]]
        )
        first = ""
        for n, piece in enumerate(pieces):
            last = n == len(pieces) - 1
            sent = await self._api.send(
                chat_id, piece, reply_to=reply_to if n == 0 else 0, keyboard=keyboard if last else None
            )
            first = first or str(sent)
        return first
