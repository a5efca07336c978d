"""A Bot API client for a token, with python-telegram-bot imported on first use in a worker thread: the
import takes about 0.2 s, which neither start-up nor the loop (the Qt window's, in the app) should pay."""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.channels.telegram.api import TelegramApi


async def open_api(token: str, urls: tuple[str, str]) -> TelegramApi:
    """A client for `token` at (API base URL, file base URL), as `config.base_urls` gives them."""
    module = await asyncio.to_thread(importlib.import_module, "core.channels.telegram.api")
    api: TelegramApi = module.TelegramApi(token, base_url=urls[0], base_file_url=urls[1])
    return api
