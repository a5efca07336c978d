"""The bots as the desktop window reads them (implements `core.bots.facade.BotFacade`): BotService's reads
and commands, plus each bot's sidebar activity from a reader built over tasks, needs-you and chat
(`core.sidebar_state`). Composed by the host once all of those exist, so BotService itself knows none."""

from __future__ import annotations

import builtins
from typing import Protocol

from core.bots.service import BotService
from core.bots.views import BotActivity, BotUpdate, BotView, ConnectionCheck, ModelPreset
from core.translations import Language


class ActivityReader(Protocol):
    async def read(self, lang: Language = "zh") -> builtins.list[BotActivity]: ...


class BotsWithActivity:
    def __init__(self, bots: BotService, activity: ActivityReader) -> None:
        self._bots = bots
        self._activity = activity

    async def list(self) -> builtins.list[BotView]:
        return await self._bots.list()

    async def get(self, bot_id: str) -> BotView:
        return await self._bots.get(bot_id)

    async def update(self, bot_id: str, changes: BotUpdate) -> BotView:
        return await self._bots.update(bot_id, changes)

    async def keep_keys_in_file(self) -> None:
        await self._bots.keep_keys_in_file()

    async def test_connection(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        bot_id: str | None = None,
        lang: Language = "zh",
    ) -> ConnectionCheck:
        return await self._bots.test_connection(base_url, model, api_key, bot_id, lang)

    async def model_presets(self, lang: Language = "zh") -> builtins.list[ModelPreset]:
        return await self._bots.model_presets(lang)

    async def activity(self, lang: Language = "zh") -> builtins.list[BotActivity]:
        """Each bot's sidebar state (working / waiting / idle) and line."""
        return await self._activity.read(lang)
