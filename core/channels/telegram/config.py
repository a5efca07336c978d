"""A Telegram bot as the person gives it (docs/channels.md#connecting-telegram): the token BotFather gave
(kept in the keyring, never in the database or a log), and the one-time pairing code that makes the first
person to send `/start <code>` the bot's owner.

`ERRAND_TELEGRAM_BASE_URL` (the `…/bot` prefix) points every Telegram channel at another server (tests use a
fake on 127.0.0.1); the file URL follows it (`…/file/bot`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping

from core.errors import InvalidInputError

DEFAULT_BASE_URL = "https://api.telegram.org/bot"
_TOKEN = re.compile(r"\d{5,15}:[A-Za-z0-9_-]{30,60}")
PAIRING_DIGITS = 6


def token_secret_name(channel_id: str) -> str:
    return f"channel:{channel_id}:bot_token"


def pairing_secret_name(channel_id: str) -> str:
    return f"channel:{channel_id}:pairing_code"


def base_urls(environ: Mapping[str, str]) -> tuple[str, str]:
    """(API base URL, file base URL)."""
    base = environ.get("ERRAND_TELEGRAM_BASE_URL", "").strip().rstrip("/") or DEFAULT_BASE_URL
    root, _, _tail = base.rpartition("/bot")
    return base, f"{root}/file/bot"


def checked_token(config: Mapping[str, object] | None) -> str:
    token = config.get("token") if isinstance(config, Mapping) else None
    if not isinstance(token, str) or not _TOKEN.fullmatch(token.strip()):
        raise InvalidInputError(
            "token", "must be the bot's token from @BotFather: digits, a colon, then 30 or more letters"
        )
    return token.strip()


def new_pairing_code() -> str:
    return f"{secrets.randbelow(10**PAIRING_DIGITS):0{PAIRING_DIGITS}d}"
