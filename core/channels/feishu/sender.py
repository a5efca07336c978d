"""One message to a Feishu chat, shaped as Feishu people expect (docs/channels.md#feishu-messages).

Chat replies are text, in the thread of the message they answer. A task's result, question, approval and
failure are interactive cards with buttons, in the thread of the request that started the task; a digest is
one card with a line per item. Every send carries a uuid made from the deliveries it carries, so a retry
(after an error, a lost answer or a crash) within Feishu's hour is still one message.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy.orm import Session

from core.channels.channel import Outgoing
from core.channels.feishu import cards
from core.channels.feishu.rest import FeishuRest
from core.channels.threads import reply_target
from core.store import approvals as approval_rows
from core.store import tasks as task_rows
from core.store.database import Database

CARD_PURPOSES = frozenset({"result", "question", "approval", "failure", "digest"})


def send_uuid(key: str) -> str:
    """Feishu's idempotency key for a send: stable for the same deliveries, at most 50 characters."""
    return hashlib.sha256(key.encode()).hexdigest()[:40]


class FeishuSender:
    def __init__(self, db: Database, rest: FeishuRest) -> None:
        self._db = db
        self._rest = rest

    async def send(self, conversation_id: str, chat_id: str, text: str, outgoing: Outgoing | None) -> str:
        """Send and return Feishu's message id, once Feishu confirmed it."""
        key = outgoing.key if outgoing is not None else f"{conversation_id}:{text}"
        msg_type, content = await self._body(text, outgoing)
        thread = await self._db.read(lambda s: reply_target(s, conversation_id, outgoing))
        uuid = send_uuid(key)
        if thread:
            sent = await self._rest.reply(thread, msg_type, content, uuid=uuid)
        else:
            sent = await self._rest.create(chat_id, msg_type, content, uuid=uuid)
        return sent.message_id

    async def send_line(self, chat_id: str, text: str, *, key: str, reply_to: str = "") -> str:
        """One plain line: to someone the bot does not serve, threaded under what they wrote."""
        content = cards.text_content(text)
        if reply_to:
            return (await self._rest.reply(reply_to, "text", content, uuid=send_uuid(key))).message_id
        return (await self._rest.create(chat_id, "text", content, uuid=send_uuid(key))).message_id

    async def _body(self, text: str, outgoing: Outgoing | None) -> tuple[str, str]:
        if outgoing is None or outgoing.purpose not in CARD_PURPOSES:
            return "text", cards.text_content(text)
        card = await self._db.read(lambda s: card_of(s, outgoing))
        if card is None:
            return "text", cards.text_content(text)
        return "interactive", cards.card_content(card)


def card_of(s: Session, outgoing: Outgoing) -> dict[str, Any] | None:
    """The card for a push, or None when it has nothing a card adds (a question whose record is gone)."""
    lang = outgoing.lang
    if outgoing.purpose == "digest":
        lines = [line for line in outgoing.lines if line]
        return cards.digest_card(lines=lines, lang=lang, away=outgoing.away)
    task = task_rows.get_task(s, outgoing.task_id) if outgoing.task_id else None
    title = task.title if task is not None else ""
    if outgoing.purpose == "result" and task is not None:
        return cards.result_card(title=title, summary=outgoing.plain, task_id=task.id, lang=lang)
    if outgoing.purpose == "failure" and task is not None:
        return cards.failure_card(
            title=title, reason=outgoing.plain, task_id=task.id, item_id=f"task_failed:{task.id}", lang=lang
        )
    asked = approval_rows.get_approval(s, outgoing.question_id) if outgoing.question_id else None
    if asked is None:
        return None
    if outgoing.purpose == "question":
        return cards.question_card(
            title=title,
            question=asked.text or outgoing.plain,
            item_id=f"question:{asked.id}",
            options=asked.options,
            default=asked.default,
            lang=lang,
        )
    if outgoing.purpose == "approval":
        item_id = f"approval:{asked.id}"
        return cards.approval_card(title=title, what=outgoing.plain, item_id=item_id, lang=lang)
    return None
