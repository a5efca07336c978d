"""The frames of WeChat's personal-bot protocol (iLink): what we read from `getupdates` and what we write
to `sendmessage`, checked field by field.

A frame from the platform is data we owe someone, so parsing never guesses: a message missing what we need
is a `FrameError` naming the field, and the caller logs it and goes on with the rest of its batch. Items of
a kind we do not read (video, tool calls) are kept as `other` so nothing silently disappears from a message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

MessageKind = Literal["user", "bot"]
ItemKind = Literal["text", "image", "voice", "file", "video", "other"]

USER_MESSAGE = 1
BOT_MESSAGE = 2
FINISHED = 2  # message_state: 0 new, 1 generating, 2 finished
TEXT_ITEM = 1
_ITEM_KINDS: dict[int, ItemKind] = {1: "text", 2: "image", 3: "voice", 4: "file", 5: "video"}
# One WeChat message holds at most this many characters; we never split a message.
MAX_TEXT = 4000


class FrameError(ValueError):
    """A frame that is not what the protocol says: `field` names what was wrong."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True, slots=True)
class MediaRef:
    """Where an encrypted attachment lies on the CDN and the key that opens it."""

    encrypted_query_param: str
    aes_key: str  # base64 of the 16-byte AES-128-ECB key (or of its hex form, as some clients send)
    full_url: str = ""
    file_name: str = ""


@dataclass(frozen=True, slots=True)
class Item:
    kind: ItemKind
    text: str = ""  # text, or a voice message's transcript
    media: MediaRef | None = None
    type_code: int = 0  # the protocol's item type, for `other`


@dataclass(frozen=True, slots=True)
class Quote:
    """The message a user quoted: its server id when the client sends one, and what it said."""

    svr_id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class InboundMessage:
    message_id: str  # the uint64 as decimal text, so it stays exact
    from_user: str
    to_user: str
    kind: MessageKind
    client_id: str
    seq: int
    create_time_ms: int
    context_token: str
    items: tuple[Item, ...]
    quote: Quote | None

    @property
    def text(self) -> str:
        """What the user said in words: the text items and voice transcripts, one per line."""
        return "\n".join(item.text for item in self.items if item.kind in ("text", "voice") and item.text)


@dataclass(frozen=True, slots=True)
class Updates:
    """One `getupdates` answer: the messages that parsed, the ones that did not (with why), and the
    cursor to ask from next time ('' when the server gave none: keep the old one)."""

    messages: tuple[InboundMessage, ...]
    refused: tuple[FrameError, ...]
    cursor: str
    poll_timeout_ms: int | None


def _str(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = data.get(key)
    if value is None or value == "":
        if required:
            raise FrameError(f"{where}{key}", "is missing")
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FrameError(f"{where}{key}", f"must be text, not {type(value).__name__}")
    return str(value)


def _int(data: Mapping[str, Any], key: str, where: str, default: int = 0) -> int:
    value = data.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FrameError(f"{where}{key}", f"must be a whole number, not {type(value).__name__}")
    try:
        return int(value)
    except ValueError:
        raise FrameError(f"{where}{key}", f"must be a whole number, not {value!r}") from None


def _mapping(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise FrameError(f"{where}{key}", f"must be an object, not {type(value).__name__}")
    return value


def _media(item: Mapping[str, Any], key: str, where: str) -> MediaRef | None:
    body = _mapping(item, key, where)
    if body is None:
        return None
    media = _mapping(body, "media", f"{where}{key}.")
    if media is None:
        return None
    inner = f"{where}{key}.media."
    return MediaRef(
        encrypted_query_param=_str(media, "encrypt_query_param", inner),
        aes_key=_str(media, "aes_key", inner) or _str(body, "aeskey", f"{where}{key}."),
        full_url=_str(media, "full_url", inner),
        file_name=_str(body, "file_name", f"{where}{key}."),
    )


def parse_item(item: object, where: str) -> Item:
    if not isinstance(item, Mapping):
        raise FrameError(where.rstrip("."), "must be an object")
    code = _int(item, "type", where)
    kind = _ITEM_KINDS.get(code, "other")
    if kind == "text":
        body = _mapping(item, "text_item", where)
        return Item("text", text=_str(body or {}, "text", f"{where}text_item."))
    if kind == "voice":
        body = _mapping(item, "voice_item", where)
        transcript = _str(body or {}, "text", f"{where}voice_item.")
        return Item("voice", text=transcript, media=_media(item, "voice_item", where))
    if kind == "image":
        return Item("image", media=_media(item, "image_item", where))
    if kind == "file":
        return Item("file", media=_media(item, "file_item", where))
    if kind == "video":
        return Item("video", media=_media(item, "video_item", where))
    return Item("other", type_code=code)


def _quote(items: list[object], where: str) -> Quote | None:
    """The first item's `ref_msg`: the quoted message's server id (`svr_id`, or on some clients the
    quoted item's `msg_id`), its summary and its text."""
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        ref = _mapping(item, "ref_msg", f"{where}item_list[{index}].")
        if ref is None:
            continue
        inner = f"{where}item_list[{index}].ref_msg."
        quoted = _mapping(ref, "message_item", inner) or {}
        svr_id = _str(ref, "svr_id", inner) or _str(quoted, "msg_id", f"{inner}message_item.")
        text_item = _mapping(quoted, "text_item", f"{inner}message_item.") or {}
        text = _str(text_item, "text", f"{inner}message_item.text_item.")
        return Quote(svr_id=svr_id, title=_str(ref, "title", inner), text=text)
    return None


def parse_message(data: object, where: str = "msgs[0].") -> InboundMessage:
    """One `WeixinMessage`; FrameError when it lacks what we need to answer it (who sent it, its token)."""
    if not isinstance(data, Mapping):
        raise FrameError(where.rstrip("."), "must be an object")
    raw_items = data.get("item_list")
    if raw_items is None:
        raw_items = []
    if not isinstance(raw_items, list):
        raise FrameError(f"{where}item_list", "must be a list")
    items = tuple(parse_item(item, f"{where}item_list[{i}].") for i, item in enumerate(raw_items))
    kind_code = _int(data, "message_type", where, default=USER_MESSAGE)
    message = InboundMessage(
        message_id=_str(data, "message_id", where),
        from_user=_str(data, "from_user_id", where, required=True),
        to_user=_str(data, "to_user_id", where),
        kind="bot" if kind_code == BOT_MESSAGE else "user",
        client_id=_str(data, "client_id", where),
        seq=_int(data, "seq", where),
        create_time_ms=_int(data, "create_time_ms", where),
        context_token=_str(data, "context_token", where),
        items=items,
        quote=_quote(raw_items, where),
    )
    if not (message.message_id or message.client_id or message.seq or message.items):
        raise FrameError(f"{where}message_id", "is missing, and so are client_id, seq and every item")
    return message


def parse_updates(data: object) -> Updates:
    """A `getupdates` answer whose `ret` is 0. Each message is parsed on its own: one bad message is
    refused (and said why) while the rest of the batch goes on."""
    if not isinstance(data, Mapping):
        raise FrameError("body", "must be a JSON object")
    raw = data.get("msgs")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise FrameError("msgs", "must be a list")
    messages: list[InboundMessage] = []
    refused: list[FrameError] = []
    for index, entry in enumerate(raw):
        try:
            messages.append(parse_message(entry, f"msgs[{index}]."))
        except FrameError as exc:
            refused.append(exc)
    timeout = data.get("longpolling_timeout_ms")
    return Updates(
        messages=tuple(messages),
        refused=tuple(refused),
        cursor=_str(data, "get_updates_buf", ""),
        poll_timeout_ms=timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None,
    )


def dedupe_key(account: str, message: InboundMessage) -> str:
    """The key a redelivered message is known by, across restarts: its message id, else its client id,
    else its seq, else a hash of what it said and when."""
    if message.message_id:
        return f"{account}:{message.from_user}:mid:{message.message_id}"
    if message.client_id:
        return f"{account}:{message.from_user}:cid:{message.client_id}"
    if message.seq:
        return f"{account}:{message.from_user}:seq:{message.seq}"
    digest = hashlib.sha256(f"{message.text}\x00{message.create_time_ms}".encode()).hexdigest()
    return f"{account}:{message.from_user}:sha:{digest}"


def text_message(to_user: str, client_id: str, context_token: str, text: str) -> dict[str, Any]:
    """The `msg` of a `sendmessage` body: one finished text item from the bot to `to_user`."""
    return {
        "from_user_id": "",
        "to_user_id": to_user,
        "client_id": client_id,
        "message_type": BOT_MESSAGE,
        "message_state": FINISHED,
        "context_token": context_token,
        "item_list": [{"type": TEXT_ITEM, "text_item": {"text": text}}],
    }


@dataclass(frozen=True, slots=True)
class OutboundText:
    to_user: str
    client_id: str
    context_token: str
    text: str


def parse_send(body: object) -> OutboundText:
    """A `sendmessage` body as the platform reads it (the fake checks ours with this): one finished text
    item from the bot, a client id, a context token, at most 4,000 characters."""
    if not isinstance(body, Mapping):
        raise FrameError("body", "must be a JSON object")
    msg = _mapping(body, "msg", "")
    if msg is None:
        raise FrameError("msg", "is missing")
    if _int(msg, "message_type", "msg.") != BOT_MESSAGE:
        raise FrameError("msg.message_type", f"must be {BOT_MESSAGE} (a bot's message)")
    items = msg.get("item_list")
    if not isinstance(items, list) or len(items) != 1:
        raise FrameError("msg.item_list", "must hold exactly one item")
    item = parse_item(items[0], "msg.item_list[0].")
    if item.kind != "text" or not item.text:
        raise FrameError("msg.item_list[0]", "must be a non-empty text item")
    if len(item.text) > MAX_TEXT:
        raise FrameError("msg.item_list[0].text_item.text", f"must be at most {MAX_TEXT} characters")
    return OutboundText(
        to_user=_str(msg, "to_user_id", "msg.", required=True),
        client_id=_str(msg, "client_id", "msg.", required=True),
        context_token=_str(msg, "context_token", "msg.", required=True),
        text=item.text,
    )
