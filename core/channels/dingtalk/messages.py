"""Reading what DingTalk's stream brings (docs/channels.md#receiving-on-dingtalk): a robot message becomes an
Arrival to store, a card button press a DingTalkPress. Both are read through dingtalk-stream's own types
(`ChatbotMessage.from_dict`, `CardCallbackMessage.from_dict`), then checked strictly: MessageError says what
is wrong with a message we cannot take, which is logged and acked, never stored half-read.

A one-to-one chat's peer is the person (their staff id: what batchSend addresses); a group's peer is the
group (its openConversationId), and the person is the message's sender. DingTalk gives our own sends no
message id, so a quote of one of them is matched by its words: `quote_ref` of the words we sent is what
the sender returned as the message's id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from core.store.channels import Arrival

MAX_ID = 300


class MessageError(ValueError):
    """A frame's data we cannot take: says what is wrong."""


@dataclass(frozen=True, slots=True)
class DingTalkPress:
    card_biz_id: str  # the card's outTrackId: the id our send returned for it
    action: str  # the pressed button's id: our button data (`q:<id>:<n>`, `y:<id>` …)
    user_id: str  # who pressed (staff id)


def quote_ref(words: str) -> str:
    """The id a message of ours is known by: its words, hashed (DingTalk gives sends no message id)."""
    flat = " ".join(words.split())
    return "t:" + hashlib.sha256(flat.encode()).hexdigest()[:24]


def read_message(sdk: ModuleType, data: object) -> Arrival:
    """The robot message `data` of a callback frame as an Arrival; MessageError when it cannot be taken."""
    if not isinstance(data, dict):
        raise MessageError("the robot message is not an object")
    try:
        message = sdk.ChatbotMessage.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MessageError(f"the robot message could not be read: {exc!r}") from None
    msg_id = _id(message.message_id, "msgId")
    conversation = _id(message.conversation_id, "conversationId")
    kind = message.conversation_type
    if kind not in ("1", "2"):
        raise MessageError(f"conversationType must be '1' or '2', not {kind!r}")
    sender = message.sender_staff_id or message.sender_id
    sender = _id(sender, "senderStaffId")
    in_group = kind == "2"
    text, items = _content(message)
    body: dict[str, Any] = {
        "text": text,
        "items": items,
        "sender": sender,
        "sender_nick": str(message.sender_nick or "")[:100],
        "chat_type": "group" if in_group else "p2p",
        "create_time_ms": message.create_at if isinstance(message.create_at, int) else 0,
    }
    if in_group:
        body["chat_title"] = str(message.conversation_title or "")[:200]
    quote = _quote(message, str(message.chatbot_user_id or ""))
    if quote:
        body["quote"] = quote
    webhook = message.session_webhook
    until = message.session_webhook_expired_time
    token = ""
    if isinstance(webhook, str) and webhook.startswith(("http://", "https://")) and isinstance(until, int):
        # Who wrote it too: a reply in a group @-mentions them, as people there expect.
        token = json.dumps({"url": webhook, "until_ms": until, "staff": sender})
    return Arrival(
        key=f"m:{msg_id}",
        peer=conversation if in_group else sender,
        platform_id=msg_id,
        body=body,
        reply_token=token,
    )


def read_press(sdk: ModuleType, data: object) -> DingTalkPress:
    """A card callback's `data` as the press it is; MessageError when it is not one of our buttons."""
    if not isinstance(data, dict):
        raise MessageError("the card callback is not an object")
    try:
        callback = sdk.CardCallbackMessage.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise MessageError(f"the card callback could not be read: {exc!r}") from None
    card = _id(callback.card_instance_id, "outTrackId")
    user = _id(callback.user_id, "userId")
    private = callback.content.get("cardPrivateData") if isinstance(callback.content, dict) else None
    actions = private.get("actionIds") if isinstance(private, dict) else None
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], str) or not actions[0]:
        raise MessageError("the card callback names no button (cardPrivateData.actionIds)")
    if len(actions[0]) > 64 or not actions[0].isprintable():
        raise MessageError("the pressed button's id is not one of ours")
    return DingTalkPress(card, actions[0], user)


def _id(raw: object, name: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise MessageError(f"{name} is missing")
    if len(raw) > MAX_ID or not raw.isprintable():
        raise MessageError(f"{name} is not an id DingTalk gives")
    return raw


def _content(message: Any) -> tuple[str, list[dict[str, Any]]]:
    """The words and attachments of a message; an unknown type keeps a line saying what it was."""
    kind = message.message_type
    if kind == "text":
        return str(message.text.content or "").strip(), []
    if kind == "richText":
        words: list[str] = []
        items: list[dict[str, Any]] = []
        for part in message.rich_text_content.rich_text_list or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                words.append(part["text"])
            if isinstance(part.get("downloadCode"), str):
                items.append({"kind": "image", "media": {"dingtalk_download": part["downloadCode"]}})
        return "".join(words).strip(), items
    if kind == "picture":
        code = message.image_content.download_code
        if not isinstance(code, str) or not code:
            raise MessageError("a picture message holds no downloadCode")
        return "", [{"kind": "image", "media": {"dingtalk_download": code}}]
    return "", [{"kind": str(kind or "other")[:40]}]


def _quote(message: Any, bot_user: str) -> dict[str, str]:
    """What the message quotes: `svr_id` is the id the quoted message is known by here (ours by its words,
    the person's by its msgId)."""
    holder = message.text.extensions if message.message_type == "text" and message.text is not None else {}
    replied = holder.get("repliedMsg") if isinstance(holder, dict) else None
    if not isinstance(replied, dict):
        return {}
    sender = replied.get("senderId")
    content = replied.get("content")
    words = content.get("text") if isinstance(content, dict) else None
    if bot_user and sender == bot_user and isinstance(words, str) and words.strip():
        return {"svr_id": quote_ref(words), "by": "bot"}
    msg_id = replied.get("msgId")
    return {"svr_id": msg_id} if isinstance(msg_id, str) and msg_id else {}
