"""What testing an app's credentials found (测试连接): the platforms where the person registers an app of
their own (Feishu or Lark now; DingTalk and Telegram later) answer with the bot that app is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AppCheck:
    bot_name: str
    """The bot's name on the platform, as people there see it."""
    bot_open_id: str
    """The platform's id of the bot (on Feishu its open_id): how an @-mention of it is recognised."""
