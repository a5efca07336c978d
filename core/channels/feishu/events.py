"""What comes in from Feishu, read strictly: the event envelope of the long connection, a received message
(from an event or from a chat's history), and a card button press (docs/channels.md#feishu).

Anything malformed is refused with the field that was wrong (`EventError`); the connection acks it all the
same (Feishu would push it again and again) and logs why it was skipped. A message's `content` is a JSON
string whose shape depends on its type; `flatten` turns text, rich text (post), images and files into our
stored body: words, attachments and what it quoted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from core.errors import InvalidInputError

MESSAGE_RECEIVED = "im.message.receive_v1"
CARD_PRESSED = "card.action.trigger"
MAX_ID = 200
_PLACEHOLDER = re.compile(r"@_user_\d+")


class EventError(InvalidInputError):
    """A frame from Feishu we cannot take: `field` names what was wrong."""


@dataclass(frozen=True, slots=True)
class Envelope:
    event_id: str
    event_type: str
    create_time_ms: int
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Mention:
    key: str  # the placeholder in the text: @_user_1
    open_id: str
    name: str


@dataclass(frozen=True, slots=True)
class FeishuMessage:
    message_id: str
    chat_id: str
    chat_type: str  # p2p | group
    sender: str  # the sender's open_id (or, from history, its id of the type history gives)
    from_app: bool  # sent by an app (ours included): never taken as a person's message
    msg_type: str
    content: dict[str, Any]
    mentions: tuple[Mention, ...] = ()
    parent_id: str = ""
    root_id: str = ""
    thread_id: str = ""
    create_time_ms: int = 0
    event_id: str = ""

    def mentions_bot(self, bot_open_id: str) -> bool:
        return bool(bot_open_id) and any(m.open_id == bot_open_id for m in self.mentions)


@dataclass(frozen=True, slots=True)
class CardPress:
    event_id: str
    operator: str  # who pressed: their open_id
    message_id: str  # the card's message
    chat_id: str
    value: object  # the button's value, checked by cards.parse_action


@dataclass(frozen=True, slots=True)
class Flattened:
    text: str
    items: list[dict[str, Any]] = field(default_factory=list)


def parse_envelope(payload: bytes) -> Envelope:
    """A schema 2.0 event from a data frame's payload."""
    try:
        decoded = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise EventError("payload", f"is not JSON: {exc}") from exc
    if not isinstance(decoded, dict):
        raise EventError("payload", "must be a JSON object")
    header = decoded.get("header")
    if not isinstance(header, dict):
        raise EventError("header", "is missing: only schema 2.0 events are read")
    event_type = _string(header, "event_type", "header.event_type", required=True)
    event = decoded.get("event")
    if not isinstance(event, dict):
        raise EventError("event", "must be an object")
    return Envelope(
        event_id=_string(header, "event_id", "header.event_id"),
        event_type=event_type,
        create_time_ms=_millis(header.get("create_time"), "header.create_time"),
        event=event,
    )


def message_of(envelope: Envelope) -> FeishuMessage:
    """The message an `im.message.receive_v1` event carries."""
    event = envelope.event
    sender = event.get("sender")
    message = event.get("message")
    if not isinstance(sender, dict):
        raise EventError("event.sender", "must be an object")
    if not isinstance(message, dict):
        raise EventError("event.message", "must be an object")
    ids = sender.get("sender_id")
    if not isinstance(ids, dict):
        raise EventError("event.sender.sender_id", "must be an object")
    return FeishuMessage(
        message_id=_string(message, "message_id", "event.message.message_id", required=True),
        chat_id=_string(message, "chat_id", "event.message.chat_id", required=True),
        chat_type=_chat_type(message.get("chat_type"), "event.message.chat_type"),
        sender=_string(ids, "open_id", "event.sender.sender_id.open_id", required=True),
        from_app=sender.get("sender_type") not in (None, "user"),
        msg_type=_string(message, "message_type", "event.message.message_type", required=True),
        content=_content(message.get("content"), "event.message.content"),
        mentions=_mentions(message.get("mentions"), "event.message.mentions"),
        parent_id=_string(message, "parent_id", "event.message.parent_id"),
        root_id=_string(message, "root_id", "event.message.root_id"),
        thread_id=_string(message, "thread_id", "event.message.thread_id"),
        create_time_ms=_millis(message.get("create_time"), "event.message.create_time"),
        event_id=envelope.event_id,
    )


def message_from_history(item: dict[str, Any], chat_type: str) -> FeishuMessage:
    """A message as a chat's history lists it (its sender and content are shaped differently)."""
    sender = item.get("sender")
    if not isinstance(sender, dict):
        raise EventError("items[].sender", "must be an object")
    body = item.get("body")
    if not isinstance(body, dict):
        raise EventError("items[].body", "must be an object")
    return FeishuMessage(
        message_id=_string(item, "message_id", "items[].message_id", required=True),
        chat_id=_string(item, "chat_id", "items[].chat_id", required=True),
        chat_type=chat_type,
        sender=_string(sender, "id", "items[].sender.id"),
        from_app=sender.get("sender_type") != "user",
        msg_type=_string(item, "msg_type", "items[].msg_type", required=True),
        content=_content(body.get("content"), "items[].body.content"),
        mentions=_mentions(item.get("mentions"), "items[].mentions", history=True),
        parent_id=_string(item, "parent_id", "items[].parent_id"),
        root_id=_string(item, "root_id", "items[].root_id"),
        thread_id=_string(item, "thread_id", "items[].thread_id"),
        create_time_ms=_millis(item.get("create_time"), "items[].create_time"),
    )


def card_press_of(envelope: Envelope) -> CardPress:
    """A button pressed on one of our cards (`card.action.trigger`)."""
    event = envelope.event
    operator = event.get("operator")
    action = event.get("action")
    context = event.get("context")
    if not isinstance(operator, dict):
        raise EventError("event.operator", "must be an object")
    if not isinstance(action, dict):
        raise EventError("event.action", "must be an object")
    if not isinstance(context, dict):
        raise EventError("event.context", "must be an object")
    return CardPress(
        event_id=envelope.event_id,
        operator=_string(operator, "open_id", "event.operator.open_id", required=True),
        message_id=_string(context, "open_message_id", "event.context.open_message_id", required=True),
        chat_id=_string(context, "open_chat_id", "event.context.open_chat_id"),
        value=action.get("value"),
    )


def flatten(message: FeishuMessage, bot_open_id: str) -> Flattened:
    """The words and attachments of a message. The bot's own @-placeholder goes; another person's
    becomes @name. Types we do not read are named (`[sticker]`), never dropped silently."""
    mine = {m.key for m in message.mentions if bot_open_id and m.open_id == bot_open_id}
    names = {m.key: "" if m.key in mine else f"@{m.name}" for m in message.mentions}

    def words(raw: object) -> str:
        said = raw if isinstance(raw, str) else ""
        return _PLACEHOLDER.sub(lambda m: names.get(m.group(0), ""), said)

    content = message.content
    if message.msg_type == "text":
        return Flattened(_tidy(words(content.get("text"))))
    if message.msg_type == "post":
        return _post(content, words)
    if message.msg_type == "image":
        key = content.get("image_key")
        if not isinstance(key, str) or not key:
            raise EventError("content.image_key", "is missing")
        return Flattened("", [{"kind": "image", "media": {"file_key": key, "type": "image"}}])
    if message.msg_type in ("file", "audio", "media"):
        key = content.get("file_key")
        if not isinstance(key, str) or not key:
            raise EventError("content.file_key", "is missing")
        name = content.get("file_name") if isinstance(content.get("file_name"), str) else ""
        media = {"file_key": key, "type": "file", "file_name": name}
        return Flattened("", [{"kind": "file", "media": media}])
    return Flattened(f"[{message.msg_type}]")


def _post(content: dict[str, Any], words: Any) -> Flattened:
    """Rich text: its title and paragraphs as lines; links keep their address; images are attachments."""
    body = content
    if "content" not in body:  # the localised form: {"zh_cn": {...}} or {"en_us": {...}}
        body = next((v for v in content.values() if isinstance(v, dict)), {})
    lines = [title] if isinstance(title := body.get("title"), str) and title.strip() else []
    items: list[dict[str, Any]] = []
    paragraphs = body.get("content")
    parts: list[str] = []

    def end_line() -> None:
        line = _tidy("".join(parts))
        if line:
            lines.append(line)
        parts.clear()

    for paragraph in paragraphs if isinstance(paragraphs, list) else []:
        for segment in paragraph if isinstance(paragraph, list) else []:
            if not isinstance(segment, dict):
                continue
            tag = segment.get("tag")
            if tag in ("text", "md"):
                parts.append(words(segment.get("text")))
            elif tag == "a":
                label, href = segment.get("text") or "", segment.get("href") or ""
                parts.append(f"{label} ({href})" if label and href and label != href else str(href or label))
            elif tag == "at":
                parts.append(words(segment.get("user_id")) if segment.get("user_id") else "")
            elif tag == "code_block":  # its own lines, as written: indentation is code
                end_line()
                if code := str(segment.get("text") or "").strip("\n"):
                    lines.append(code)
            elif tag == "img" and isinstance(segment.get("image_key"), str):
                items.append({"kind": "image", "media": {"file_key": segment["image_key"], "type": "image"}})
            elif tag == "emotion":
                parts.append(f"[{segment.get('emoji_type') or 'emoji'}]")
        end_line()
    return Flattened("\n".join(lines), items)


def _tidy(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines()).strip()


def _content(raw: object, name: str) -> dict[str, Any]:
    if not isinstance(raw, str):
        raise EventError(name, "must be a JSON string")
    try:
        decoded = json.loads(raw)
    except ValueError as exc:
        raise EventError(name, f"is not JSON: {exc}") from exc
    if not isinstance(decoded, dict):
        raise EventError(name, "must hold a JSON object")
    return decoded


def _mentions(raw: object, name: str, *, history: bool = False) -> tuple[Mention, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise EventError(name, "must be a list")
    found = []
    for n, mention in enumerate(raw):
        if not isinstance(mention, dict):
            raise EventError(f"{name}[{n}]", "must be an object")
        ident = mention.get("id")
        # Events give {"id": {"open_id": ...}}; history gives the id itself with its id_type.
        open_id = ident.get("open_id") if isinstance(ident, dict) else ident if history else None
        found.append(
            Mention(
                key=_string(mention, "key", f"{name}[{n}].key"),
                open_id=open_id if isinstance(open_id, str) else "",
                name=str(mention.get("name") or ""),
            )
        )
    return tuple(found)


def _chat_type(raw: object, name: str) -> str:
    if raw not in ("p2p", "group"):
        raise EventError(name, f"must be p2p or group, not {raw!r}")
    return str(raw)


def _string(holder: dict[str, Any], key: str, name: str, *, required: bool = False) -> str:
    value = holder.get(key)
    if value is None or value == "":
        if required:
            raise EventError(name, "is missing")
        return ""
    if not isinstance(value, str) or len(value) > MAX_ID or not value.isprintable():
        raise EventError(name, f"must be an id of at most {MAX_ID} printable characters")
    return value


def _millis(raw: object, name: str) -> int:
    if raw is None or raw == "":
        return 0
    try:
        value = int(str(raw))
    except ValueError as exc:
        raise EventError(name, "must be a time in milliseconds") from exc
    if value < 0:
        raise EventError(name, "must be a time in milliseconds")
    return value
