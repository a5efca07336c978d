"""The reads and commands the desktop UI uses for bots and their settings. `BotService` implements it; UI
tests fake it (tests/fakes/fake_bots.py)."""

from __future__ import annotations

import builtins
from typing import Protocol

from core.bots.views import BotActivity, BotUpdate, BotView, ConnectionCheck, ModelPreset
from core.translations import Language


class BotFacade(Protocol):
    async def list(self) -> list[BotView]:
        """Every bot, the default first."""
        ...

    async def get(self, bot_id: str) -> BotView:
        """Raises NotFoundError for an unknown id."""
        ...

    async def update(self, bot_id: str, changes: BotUpdate) -> BotView:
        """Apply `changes` in one transaction (the key goes to the keyring first). Raises InvalidInputError
        naming the field, NotFoundError, or UnavailableError when a key can't be stored; nothing changes
        then. Publishes BotsChanged."""
        ...

    async def keep_keys_in_file(self) -> None:
        """Keep API keys in a private plaintext file in the data dir from now on (offered when no keyring
        answers: an UnavailableError with key `error.no_keyring`); the choice is remembered."""
        ...

    async def test_connection(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        bot_id: str | None = None,
        lang: Language = "zh",
    ) -> ConnectionCheck:
        """Make one real, tiny request. `api_key=None` uses the key stored for `bot_id`. Never raises for a
        network or model error: the check says what went wrong and what to do."""
        ...

    async def model_presets(self, lang: Language = "zh") -> builtins.list[ModelPreset]:
        """The first-run choices: DeepSeek, OpenAI, OpenRouter, and a local Ollama when one answers."""
        ...

    async def activity(self, lang: Language = "zh") -> builtins.list[BotActivity]:
        """Each bot's sidebar state (working / waiting / idle) and line."""
        ...
