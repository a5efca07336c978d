"""What comes in from Telegram's getUpdates, read strictly (docs/channels.md#receiving-on-telegram): a
person's message, or a button pressed under one of ours. Anything else is skipped; anything malformed is
refused with the field that was wrong (`UpdateError`), and its update_id still moves the offset on, so one
bad update never blocks the ones after it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import InvalidInputError

MAX_TEXT = 4096


class UpdateError(InvalidInputError):
    """An update we cannot take: `field` names what was wrong."""


@dataclass(frozen=True, slots=True)
class TelegramMessage:
    update_id: int
    message_id: int
    chat_id: int
    chat_type: str  # private | group | supergroup | channel
    sender: int
    from_bot: bool
    text: str
    date: int
    reply_to: int = 0  # the message it answers (a quote), in the same chat
    items: list[dict[str, Any]] = field(default_factory=list)  # photos and documents, by file_id


@dataclass(frozen=True, slots=True)
class TelegramPress:
    update_id: int
    id: str  # the callback query's, to answer
    sender: int
    chat_id: int
    message_id: int  # our message whose button it was
    data: str


def update_id_of(raw: object) -> int | None:
    """The update's id even when the rest of it is unreadable: the offset must move past it."""
    if isinstance(raw, dict) and isinstance(raw.get("update_id"), int):
        value: int = raw["update_id"]
        return value
    return None


def read_update(raw: object) -> TelegramMessage | TelegramPress | None:
    """A message or a press; None for kinds we do not take (edits, joins, channel posts)."""
    if not isinstance(raw, dict):
        raise UpdateError("update", "must be an object")
    update_id = update_id_of(raw)
    if update_id is None:
        raise UpdateError("update_id", "must be an integer")
    if isinstance(raw.get("callback_query"), dict):
        return _press(update_id, raw["callback_query"])
    message = raw.get("message")
    if message is None:
        return None
    if not isinstance(message, dict):
        raise UpdateError("message", "must be an object")
    return _message(update_id, message)


def _message(update_id: int, message: dict[str, Any]) -> TelegramMessage:
    chat = _object(message, "chat", "message.chat")
    sender = _object(message, "from", "message.from")
    text = message.get("text")
    if text is None:
        text = message.get("caption")
    if text is not None and (not isinstance(text, str) or len(text) > MAX_TEXT):
        raise UpdateError("message.text", f"must be text of at most {MAX_TEXT} characters")
    items: list[dict[str, Any]] = []
    photos = message.get("photo")
    if isinstance(photos, list) and photos:
        largest = photos[-1]  # Telegram lists the sizes from the smallest
        if not isinstance(largest, dict) or not isinstance(largest.get("file_id"), str):
            raise UpdateError("message.photo", "must list sizes with a file_id")
        items.append({"kind": "image", "media": {"telegram_file": largest["file_id"], "type": "image"}})
    document = message.get("document")
    if isinstance(document, dict):
        if not isinstance(document.get("file_id"), str):
            raise UpdateError("message.document.file_id", "is missing")
        name = document.get("file_name") if isinstance(document.get("file_name"), str) else ""
        media = {"telegram_file": document["file_id"], "type": "file", "file_name": name}
        items.append({"kind": "file", "media": media})
    quoted = message.get("reply_to_message")
    reply_to = quoted.get("message_id") if isinstance(quoted, dict) else 0
    return TelegramMessage(
        update_id=update_id,
        message_id=_int(message, "message_id", "message.message_id"),
        chat_id=_int(chat, "id", "message.chat.id"),
        chat_type=str(chat.get("type") or "private"),
        sender=_int(sender, "id", "message.from.id"),
        from_bot=bool(sender.get("is_bot")),
        text=(text or "").strip(),
        date=_int(message, "date", "message.date"),
        reply_to=reply_to if isinstance(reply_to, int) else 0,
        items=items,
    )


def _press(update_id: int, query: dict[str, Any]) -> TelegramPress:
    sender = _object(query, "from", "callback_query.from")
    message = _object(query, "message", "callback_query.message")
    chat = _object(message, "chat", "callback_query.message.chat")
    data = query.get("data")
    if not isinstance(data, str) or not data or len(data.encode()) > 64:
        raise UpdateError("callback_query.data", "must be the button's data: 1 to 64 bytes")
    press_id = query.get("id")
    if not isinstance(press_id, str) or not press_id:
        raise UpdateError("callback_query.id", "is missing")
    return TelegramPress(
        update_id=update_id,
        id=press_id,
        sender=_int(sender, "id", "callback_query.from.id"),
        chat_id=_int(chat, "id", "callback_query.message.chat.id"),
        message_id=_int(message, "message_id", "callback_query.message.message_id"),
        data=data,
    )


def _object(holder: dict[str, Any], key: str, name: str) -> dict[str, Any]:
    value = holder.get(key)
    if not isinstance(value, dict):
        raise UpdateError(name, "must be an object")
    return value


def _int(holder: dict[str, Any], key: str, name: str) -> int:
    value = holder.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise UpdateError(name, "must be an integer")
    return value
