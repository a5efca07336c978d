"""One message to a DingTalk chat (docs/channels.md#dingtalk-messages), counted as sent only once DingTalk
confirmed it.

- A task's question with options, an approval and a failure go as interactive cards whose buttons do what
  the desktop's do. A card's cardBizId is made from the deliveries it carries, so sending it again (after an
  error, a lost answer or a crash) is still one card; the id is what the send returns, and what a press
  names.
- Everything else is text, or Markdown when it has Markdown in it: through the session webhook of the
  person's latest message while it is valid (its `errcode` 0 is the confirmation), else through the robot's
  OpenAPI (one-to-one batchSend, or a group send), whose processQueryKey is read back until DingTalk says
  SUCCESS.
- What DingTalk throttled, failed or would not confirm is a plain failure: the outbox tries again with its
  backoff and, after three, shows it in needs-you. A send left unconfirmed keeps its processQueryKey in the
  store (`PendingSends`), and the next try, after a restart too, reads that back before sending again, so
  a slow confirmation is not a second message. Only a send that got no answer at all may be there unseen:
  SendOutcomeUnknown.

DingTalk gives our sends no message id, so a text message is known by its words (`quote_ref`): a person who
quotes it is matched to it by those.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from core.channels.channel import Outgoing, SendOutcomeUnknown
from core.channels.dingtalk import cards
from core.channels.dingtalk.messages import quote_ref
from core.channels.dingtalk.openapi import DingTalkApi, DingTalkError
from core.channels.split import split_paragraphs
from core.clock import Clock
from core.store import approvals as approval_rows
from core.store import tasks as task_rows
from core.store.channels import PeerRecord
from core.store.database import Database
from core.store.settings import JsonValue, delete_setting, get_setting, set_setting
from core.translations import Language, text

log = logging.getLogger(__name__)

MAX_CHARS = 5000  # sampleText's content; a push is shaped to fit, a longer chat reply goes as several
WEBHOOK_MARGIN_MS = 60_000  # a session webhook this close to its end is not used
READ_BACK_WAITS_S = (0.5, 1.0, 2.0, 4.0)  # between reads of a send's status, before it counts as unconfirmed
_MARKDOWN = re.compile(r"(^|\n)\s*(#{1,6} |[-*] |\d+\. |> |```)|\*\*[^*\n]+\*\*|\[[^\]\n]+\]\([^)\s]+\)")


class NotConfirmed(DingTalkError):
    """DingTalk took the send but did not say it arrived (throttled, FAIL, or still PROCESSING)."""


@dataclass(frozen=True, slots=True)
class Pending:
    process_query_key: str
    group_id: str  # '' for a one-to-one send


class PendingSends:
    """Sends DingTalk took but had not confirmed, by delivery key, kept in the store: the outbox's retry
    after a restart reads them back too, instead of sending a message that may yet arrive a second time."""

    def __init__(self, db: Database, clock: Clock, channel_id: str) -> None:
        self._db = db
        self._clock = clock
        self._prefix = f"dingtalk_pending:{channel_id}:"

    def _name(self, key: str) -> str:
        return self._prefix + hashlib.sha256(key.encode()).hexdigest()[:32]

    async def get(self, key: str) -> Pending | None:
        found = await self._db.read(lambda s: get_setting(s, self._name(key)))
        if not isinstance(found, dict) or not isinstance(found.get("key"), str):
            return None
        group = found.get("group")
        return Pending(str(found["key"]), group if isinstance(group, str) else "")

    async def put(self, key: str, pending: Pending) -> None:
        value: JsonValue = {"key": pending.process_query_key, "group": pending.group_id}
        now = self._clock.time()
        await self._db.write(lambda s: set_setting(s, self._name(key), value, now))

    async def drop(self, key: str) -> None:
        await self._db.write(lambda s: delete_setting(s, self._name(key)))


def card_biz_id(key: str) -> str:
    """A card's idempotency key: stable for the same deliveries."""
    return "e" + hashlib.sha256(key.encode()).hexdigest()[:31]


def is_group(peer: PeerRecord) -> bool:
    """A group's peer is asked about at its first message (docs/channels.md#groups); a person's never."""
    return bool(peer.admission)


def card_of(s: Session, outgoing: Outgoing | None) -> cards.Card | None:
    """The card a push is, or None when it is words (a result, a digest, a question without options)."""
    if outgoing is None or outgoing.purpose not in ("question", "approval", "failure"):
        return None
    lang = outgoing.lang
    task = task_rows.get_task(s, outgoing.task_id) if outgoing.task_id else None
    title = task.title if task is not None else "Errand"
    if outgoing.purpose == "failure":
        if task is None:
            return None
        buttons = [(_label(lang, "retry"), f"r:{task.id}"), (_label(lang, "stop"), f"s:{task.id}")]
        return cards.card(title, outgoing.plain, buttons)
    asked = approval_rows.get_approval(s, outgoing.question_id) if outgoing.question_id else None
    if asked is None:
        return None
    if outgoing.purpose == "question":
        if not asked.options:
            return None  # answered in words, by quoting it
        buttons = [(option, f"q:{asked.id}:{n}") for n, option in enumerate(asked.options)]
        chosen = asked.options.index(asked.default) if asked.default in asked.options else -1
        default = f"q:{asked.id}:{chosen}" if chosen >= 0 else ""
        return cards.card(title, asked.text or outgoing.plain, buttons, primary=default)
    buttons = [(_label(lang, "approve"), f"y:{asked.id}"), (_label(lang, "deny"), f"n:{asked.id}")]
    return cards.card(title, outgoing.plain, buttons)


def _label(lang: Language, action: str) -> str:
    return text(lang, f"telegram_button.{action}")


class DingTalkSender:
    def __init__(self, db: Database, clock: Clock, api: DingTalkApi, *, pending: PendingSends) -> None:
        self._db = db
        self._clock = clock
        self._api = api
        self._pending = pending

    async def send(
        self, conversation_id: str, peer: PeerRecord, words: str, outgoing: Outgoing | None
    ) -> str:
        """Send and return the id the message is known by here, once DingTalk confirmed it."""
        key = outgoing.key if outgoing is not None else f"{conversation_id}:{words}"
        found = await self._db.read(lambda s: card_of(s, outgoing))
        if found is not None:
            return await self._card(key, peer, found)
        pieces = (
            split_paragraphs(words, MAX_CHARS)
            if outgoing is None or outgoing.purpose == "reply"
            else [words[:MAX_CHARS]]
        )
        first = ""
        for n, piece in enumerate(pieces):
            await self._words(f"{key}#{n}" if n else key, peer, piece)
            first = first or quote_ref(piece)
        return first

    async def send_line(self, peer: PeerRecord, words: str, *, key: str) -> str:
        """One plain line to a peer with no conversation here (someone the bot does not serve)."""
        await self._words(key, peer, words)
        return quote_ref(words)

    async def _card(self, key: str, peer: PeerRecord, found: cards.Card) -> str:
        biz_id = card_biz_id(key)
        data = cards.card_data(found)
        try:
            if is_group(peer):
                await self._api.send_card(biz_id, data, group_id=peer.peer)
            else:
                await self._api.send_card(biz_id, data, user_id=peer.peer)
        except DingTalkError as exc:
            # The same cardBizId is one card however often it is sent: a lost answer is only a failure.
            log.warning("dingtalk: card %s was not sent: %s", biz_id, exc)
            raise
        return biz_id

    async def _words(self, key: str, peer: PeerRecord, words: str) -> None:
        msg_key, param = robot_message(words)
        webhook = self.webhook_of(peer)
        if webhook is not None and await self._pending.get(key) is None:
            url, staff = webhook
            body: dict[str, Any] = {"msgtype": "markdown" if msg_key == "sampleMarkdown" else "text"}
            if msg_key == "sampleMarkdown":
                body["markdown"] = {"title": param["title"], "text": param["text"]}
            else:
                body["text"] = {"content": param["content"]}
            if is_group(peer) and staff:
                body["at"] = {"atUserIds": [staff]}
            try:
                await self._api.webhook_send(url, body)
                return
            except DingTalkError as exc:
                if exc.sent:  # no answer: it may be there, and a webhook send has no key to dedupe by
                    raise SendOutcomeUnknown(str(exc)) from exc
                log.info("dingtalk: the session webhook refused a reply (%s); sending by the OpenAPI", exc)
        await self._openapi(key, peer, msg_key, param)

    def webhook_of(self, peer: PeerRecord) -> tuple[str, str] | None:
        """The session webhook of the peer's latest message, and who wrote it, while it is good to use."""
        try:
            token = json.loads(peer.reply_token) if peer.reply_token else None
        except ValueError:
            return None
        if not isinstance(token, dict):
            return None
        url, until = token.get("url"), token.get("until_ms")
        if not isinstance(url, str) or not isinstance(until, int):
            return None
        if until - WEBHOOK_MARGIN_MS <= self._clock.time() * 1000:
            return None
        staff = token.get("staff")
        return url, staff if isinstance(staff, str) else ""

    async def _openapi(self, key: str, peer: PeerRecord, msg_key: str, param: dict[str, Any]) -> None:
        earlier = await self._pending.get(key)
        if earlier is not None:
            status = await self._read_back(earlier)
            if status == "SUCCESS":
                await self._pending.drop(key)
                return
            if status in ("PROCESSING", ""):
                said = status or "no status"
                raise NotConfirmed(f"DingTalk has not confirmed the earlier send yet ({said})")
            await self._pending.drop(key)  # FAIL: it did not arrive, so it goes again
        group = peer.peer if is_group(peer) else ""
        try:
            if group:
                query_key = await self._api.group_send(group, msg_key, param)
            else:
                answer = await self._api.batch_send(peer.peer, msg_key, param)
        except DingTalkError as exc:
            if exc.sent:
                raise SendOutcomeUnknown(str(exc)) from exc
            raise
        if not group:
            if answer.throttled:
                raise NotConfirmed("DingTalk is holding back sends to this person (flow control)")
            if answer.invalid:
                raise NotConfirmed("DingTalk does not know this person as a member of the app's company")
            query_key = answer.process_query_key
        sent = Pending(query_key, group)
        await self._pending.put(key, sent)
        status = await self._read_back(sent)
        if status in ("SUCCESS", "FAIL"):
            await self._pending.drop(key)
        if status == "SUCCESS":
            return
        if status == "FAIL":
            raise NotConfirmed("DingTalk says the message could not be delivered")
        said = status or "no status"
        raise NotConfirmed(f"DingTalk has not confirmed the message ({said}); asking again later")

    async def _read_back(self, sent: Pending) -> str:
        """DingTalk's word on a send, asked until it is not PROCESSING (or the waits are used up)."""
        status = ""
        for wait in (0.0, *READ_BACK_WAITS_S):
            if wait:
                await self._clock.sleep(wait)
            try:
                status = await self._api.send_status(sent.process_query_key, group_id=sent.group_id)
            except DingTalkError as exc:
                log.info("dingtalk: reading a send back failed: %s", exc)
                status = ""
                continue
            if status in ("SUCCESS", "FAIL"):
                return status
        return status


def robot_message(words: str) -> tuple[str, dict[str, Any]]:
    """The robot message a text is: Markdown when it has Markdown in it, else plain text."""
    if _MARKDOWN.search(words):
        first = next((line.strip(" #*>-") for line in words.splitlines() if line.strip()), "")
        return "sampleMarkdown", {"title": first[:20] or "Errand", "text": words}
    return "sampleText", {"content": words}
