"""What went wrong with a Bot API call, apart from the SDK: the parts of Errand that decide what to do about
it (the outbox, the receiver, the service) read this without importing python-telegram-bot, which only a
Telegram channel's connection needs."""

from __future__ import annotations


class TelegramFault(Exception):
    def __init__(
        self,
        message: str,
        *,
        sent: bool = False,
        retry_after: float = 0.0,
        token_refused: bool = False,
        refused: bool = False,
    ) -> None:
        super().__init__(message)
        self.sent = sent  # the request went out and no answer came: it may have been carried out
        self.retry_after = retry_after  # Telegram's 429: wait this long
        self.token_refused = token_refused  # the token is wrong or revoked: the person must give a new one
        self.refused = refused  # Telegram said no to this request (400, 403): trying again will not help
