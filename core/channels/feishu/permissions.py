"""The permissions (scopes) a Feishu or Lark app needs for Errand, in the words the connect dialog shows
(docs/channels.md#connecting-feishu). The person ticks these in the platform's developer console; the
platform never tells an app which of them it lacks until a call is refused."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Permission:
    scope: str
    why_zh: str
    why_en: str


PERMISSIONS: tuple[Permission, ...] = (
    Permission("im:message", "以应用身份发消息、回复和更新卡片", "send, reply and update cards as the app"),
    Permission(
        "im:message.p2p_msg:readonly", "收到私聊里发给机器人的消息", "receive direct messages to the bot"
    ),
    Permission(
        "im:message.group_at_msg:readonly",
        "收到群里 @机器人 的消息",
        "receive group messages that @-mention the bot",
    ),
    Permission(
        "im:message.history:readonly",
        "应用没开着时的消息,启动后补上(可选)",
        "catch up on messages sent while the app was off (optional)",
    ),
    Permission(
        "im:message.group_msg",
        "群里没开着时的消息也能补上(可选)",
        "catch up on group messages too (optional)",
    ),
    Permission("im:resource", "读取消息里的图片和文件", "read the images and files in messages"),
)
# Also needed, in the developer console: the bot capability turned on, events by long connection with
# im.message.receive_v1, and the card.action.trigger callback by long connection.
EVENTS: tuple[str, ...] = ("im.message.receive_v1", "card.action.trigger")
