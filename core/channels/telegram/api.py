"""The Bot API calls Errand makes, through python-telegram-bot's `Bot` on our loop (it speaks httpx
asynchronously). Answers come back as the raw JSON Telegram sent (`do_api_request` with no return type), so
`updates.py` reads them strictly and one malformed update never stops the others.

It says what went wrong and decides nothing: `TelegramFault` carries whether the call may have been carried
out (`sent`), how long Telegram asked us to wait (`retry_after`) and whether the token itself was refused.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass
from typing import Any

from telegram import Bot
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.request import HTTPXRequest
from telegram.warnings import PTBUserWarning

from core.channels.telegram.fault import TelegramFault

log = logging.getLogger(__name__)
# We call every method by name to read its raw answer (see above); PTB suggests its typed methods instead.
warnings.filterwarnings("ignore", message=r"Please use 'Bot\.", category=PTBUserWarning)

POLL_TIMEOUT_S = 25  # how long Telegram holds a getUpdates with nothing to give
REQUEST_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class Me:
    id: int
    username: str
    first_name: str


class TelegramApi:
    def __init__(self, token: str, *, base_url: str, base_file_url: str) -> None:
        self._bot = Bot(
            token,
            base_url=base_url,
            base_file_url=base_file_url,
            request=HTTPXRequest(connection_pool_size=4, read_timeout=REQUEST_TIMEOUT_S),
            get_updates_request=HTTPXRequest(read_timeout=POLL_TIMEOUT_S + 10.0),
        )

    async def close(self) -> None:
        with contextlib.suppress(TelegramError):
            await self._bot.shutdown()

    async def me(self) -> Me:
        found = await self._call("getMe", {})
        if not isinstance(found, dict) or not isinstance(found.get("id"), int):
            raise TelegramFault("Telegram's getMe answer has no id")
        return Me(found["id"], str(found.get("username") or ""), str(found.get("first_name") or ""))

    async def updates(self, offset: int, *, timeout: int = POLL_TIMEOUT_S) -> list[Any]:
        """The raw updates from `offset` on (which confirms the ones before it), held up to `timeout` s."""
        found = await self._call(
            "getUpdates",
            {"offset": offset, "timeout": timeout, "allowed_updates": ["message", "callback_query"]},
            read_timeout=timeout + 10.0,
        )
        if not isinstance(found, list):
            raise TelegramFault("Telegram's getUpdates answer is not a list")
        return found

    async def send(
        self,
        chat_id: int | str,
        text: str,
        *,
        reply_to: int = 0,
        keyboard: list[list[dict[str, str]]] | None = None,
    ) -> int:
        """Send one message; its message_id once Telegram confirmed it."""
        args: dict[str, Any] = {"chat_id": chat_id, "text": text}
        if reply_to:
            # A reply whose message is gone still goes, as a plain message.
            args["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
        if keyboard:
            args["reply_markup"] = {"inline_keyboard": keyboard}
        found = await self._call("sendMessage", args, sending=True)
        if not isinstance(found, dict) or not isinstance(found.get("message_id"), int):
            raise TelegramFault("Telegram accepted the message but its answer has no message_id", sent=True)
        message_id: int = found["message_id"]
        return message_id

    async def answer_press(self, press_id: str, text: str) -> None:
        await self._call("answerCallbackQuery", {"callback_query_id": press_id, "text": text[:190]})

    async def settle_message(self, chat_id: int | str, message_id: int, text: str) -> None:
        """The bot's message, its buttons gone and `text` in their place (what was chosen, and by whom)."""
        await self._call(
            "editMessageText",
            {
                "chat_id": chat_id,
                "message_id": message_id,
                "text": text[:4096],
                "reply_markup": {"inline_keyboard": []},
            },
        )

    async def file(self, file_id: str, *, limit: int) -> bytes:
        found = await self._call("getFile", {"file_id": file_id})
        if not isinstance(found, dict) or not isinstance(found.get("file_path"), str):
            raise TelegramFault("Telegram's getFile answer has no file_path")
        size = found.get("file_size")
        if isinstance(size, int) and size > limit:
            raise TelegramFault(f"the file is larger than {limit // 2**20} MB", refused=True)
        try:
            data = await self._bot.request.retrieve(f"{self._bot.base_file_url}/{found['file_path']}")
        except TelegramError as exc:
            raise TelegramFault(f"could not download the file: {exc}") from exc
        if len(data) > limit:
            raise TelegramFault(f"the file is larger than {limit // 2**20} MB", refused=True)
        return bytes(data)

    async def _call(
        self, method: str, args: dict[str, Any], *, sending: bool = False, read_timeout: float | None = None
    ) -> Any:
        kwargs: dict[str, Any] = {"api_kwargs": args}
        if read_timeout is not None:
            kwargs["read_timeout"] = read_timeout
        try:
            return await self._bot.do_api_request(method, **kwargs)
        except RetryAfter as exc:
            # Its private timedelta: the public attribute warns that it will change type.
            seconds = float(exc._retry_after.total_seconds())
            raise TelegramFault(f"Telegram asks to wait {seconds:.0f} s", retry_after=seconds) from exc
        except InvalidToken as exc:
            raise TelegramFault(f"Telegram refused the bot's token: {exc}", token_refused=True) from exc
        except Forbidden as exc:
            refused = "unauthorized" in str(exc).lower()
            raise TelegramFault(
                f"Telegram refused the {method}: {exc}", refused=True, token_refused=refused
            ) from exc
        except (BadRequest, ChatMigrated, Conflict) as exc:
            raise TelegramFault(
                f"Telegram refused the {method}: {exc}", refused=not isinstance(exc, Conflict)
            ) from exc
        except TimedOut as exc:
            raise TelegramFault(f"no answer from Telegram for the {method}: {exc}", sent=sending) from exc
        except NetworkError as exc:
            # PTB raises this both for Telegram's own 5xx answer (it answered: the send did not go) and for a
            # connection that broke ("httpx.…": it may have gone).
            broke = str(exc).startswith("httpx.") and "Connect" not in str(exc)  # never connected: not sent
            raise TelegramFault(
                f"could not reach Telegram for the {method}: {exc}", sent=sending and broke
            ) from exc
        except TelegramError as exc:
            raise TelegramFault(f"Telegram failed the {method}: {exc}", sent=sending) from exc
