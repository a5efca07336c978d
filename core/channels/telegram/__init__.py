"""Telegram through `python-telegram-bot`: the bot token, long polling with a stored offset, replies with
inline keyboards (docs/channels.md#telegram)."""
