"""An in-memory BotFacade and PreferencesFacade for UI tests and renders.

Bots are added by hand (`add`); `update` validates the way the real service does for the fields UI tests
touch (name, task slots, quiet hours, base URL) and announces BotsChanged. `test_connection` answers with
`connection` (set it to a failing ConnectionCheck to see the UI say why), after `connection_gate` when a
test sets one, so the UI can be seen not to wait. `activities` is what `activity()` returns; change it and
call `announce()` to move an avatar between idle, working and waiting.
"""

from __future__ import annotations

import asyncio
import builtins
import re
import time
from dataclasses import replace
from typing import Any

from core.bots.views import BotActivity, BotUpdate, BotView, ConnectionCheck, ModelPreset
from core.bus import EventBus
from core.changes import BotsChanged
from core.errors import InvalidInputError, NotFoundError, UnavailableError
from core.preferences import LANGUAGE_CHOICES, THEME_CHOICES, Preferences, PreferencesUpdate

_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")

DEFAULT_PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/v1",
        "deepseek-chat",
        key_hint="https://platform.deepseek.com/api_keys",
    ),
    ModelPreset(
        "openai",
        "OpenAI",
        "https://api.openai.com/v1",
        "gpt-4o-mini",
        key_hint="https://platform.openai.com/api-keys",
    ),
    ModelPreset(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        "openai/gpt-4o-mini",
        key_hint="https://openrouter.ai/keys",
    ),
)


class FakeBotFacade:
    def __init__(self, bus: EventBus | None = None) -> None:
        self.bus = bus or EventBus()
        self._bots: dict[str, BotView] = {}
        self._keys: dict[str, str] = {}
        self.updates: builtins.list[tuple[str, BotUpdate]] = []
        self.checks: builtins.list[tuple[str, str, str | None, str | None]] = []
        self.connection = ConnectionCheck(ok=True, message="连接正常", latency_ms=120.0)
        self.connection_gate: asyncio.Event | None = None
        self.presets: builtins.list[ModelPreset] = list(DEFAULT_PRESETS)
        self.activities: dict[str, BotActivity] = {}
        self.update_error: Exception | None = None
        # No keyring answers (as app.secrets says it): a key cannot be saved until keys go to the file.
        self.no_keyring = False
        self.keys_in_file = False
        self.preferences_value = Preferences()
        self.preference_updates: builtins.list[PreferencesUpdate] = []

    # -- set-up -----------------------------------------------------------------------------------

    def add(
        self, name: str = "Errand", *, bot_id: str | None = None, configured: bool = True, **fields: Any
    ) -> BotView:
        bot_id = bot_id or f"b_{len(self._bots) + 1:012x}"
        view = BotView(
            id=bot_id,
            name=name,
            workspace=f"/tmp/errand-fake/bots/{bot_id}/workspace",
            model_provider="openai",
            model_base_url="https://api.deepseek.com/v1" if configured else "",
            model_name="deepseek-chat" if configured else "",
            has_api_key=configured,
            preset="workspace-write",
            is_default=not self._bots,
            created_at=time.time(),
        )
        view = replace(view, **fields)
        self._bots[bot_id] = view
        self.announce()
        return view

    def announce(self) -> None:
        self.bus.publish(BotsChanged())

    # -- BotFacade --------------------------------------------------------------------------------

    async def list(self) -> builtins.list[BotView]:
        await asyncio.sleep(0)
        return sorted(self._bots.values(), key=lambda b: (not b.is_default, b.created_at))

    async def get(self, bot_id: str) -> BotView:
        await asyncio.sleep(0)
        try:
            return self._bots[bot_id]
        except KeyError:
            raise NotFoundError("bot", bot_id) from None

    async def update(self, bot_id: str, changes: BotUpdate) -> BotView:
        await asyncio.sleep(0)
        if self.update_error is not None:
            raise self.update_error
        bot = await self.get(bot_id)
        if changes.name is not None and not changes.name.strip():
            raise InvalidInputError("name", "must not be empty")
        if changes.task_slots is not None and not 1 <= changes.task_slots <= 4:
            raise InvalidInputError("taskSlots", "must be 1 to 4")
        for field, value in (
            ("quietHours.start", changes.quiet_start),
            ("quietHours.end", changes.quiet_end),
        ):
            if value is not None and not _HHMM.match(value):
                raise InvalidInputError(field, f"{value!r} is not a time like 22:00")
        if changes.model_base_url and not changes.model_base_url.startswith(("http://", "https://")):
            raise InvalidInputError("baseUrl", "is not an http(s) URL")
        if self.no_keyring and changes.api_key:
            raise UnavailableError("No OS keyring is available here.", key="error.no_keyring")
        self.updates.append((bot_id, changes))
        if changes.api_key is not None:
            if changes.api_key:
                self._keys[bot_id] = changes.api_key
            else:
                self._keys.pop(bot_id, None)
        fields: dict[str, Any] = {
            k: v
            for k, v in (
                ("name", changes.name),
                ("avatar", changes.avatar),
                ("model_provider", changes.model_provider),
                ("model_base_url", changes.model_base_url),
                ("model_name", changes.model_name),
                ("preset", changes.preset),
                ("task_slots", changes.task_slots),
                ("quiet_start", changes.quiet_start),
                ("quiet_end", changes.quiet_end),
                ("paused", changes.paused),
                ("images", changes.images),
                ("images_chosen", changes.images),
            )
            if v is not None
        }
        if changes.api_key is not None:
            fields["has_api_key"] = bool(changes.api_key)
        updated = replace(bot, **fields)
        self._bots[bot_id] = updated
        self.announce()
        return updated

    async def keep_keys_in_file(self) -> None:
        await asyncio.sleep(0)
        self.no_keyring = False
        self.keys_in_file = True

    def key_of(self, bot_id: str) -> str | None:
        return self._keys.get(bot_id)

    async def test_connection(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        bot_id: str | None = None,
        lang: str = "zh",
    ) -> ConnectionCheck:
        self.checks.append((base_url, model, api_key, bot_id))
        if self.connection_gate is not None:
            await self.connection_gate.wait()
        await asyncio.sleep(0)
        return self.connection

    async def model_presets(self, lang: str = "zh") -> builtins.list[ModelPreset]:
        await asyncio.sleep(0)
        return list(self.presets)

    async def activity(self, lang: str = "zh") -> builtins.list[BotActivity]:
        await asyncio.sleep(0)
        return [self.activities.get(b.id, BotActivity(b.id, "idle")) for b in self._bots.values()]

    # -- PreferencesFacade ------------------------------------------------------------------------

    async def preferences(self) -> Preferences:
        await asyncio.sleep(0)
        return self.preferences_value

    async def update_preferences(self, changes: PreferencesUpdate) -> Preferences:
        await asyncio.sleep(0)
        if changes.language is not None and changes.language not in LANGUAGE_CHOICES:
            raise InvalidInputError("language", f"one of {', '.join(LANGUAGE_CHOICES)}")
        if changes.theme is not None and changes.theme not in THEME_CHOICES:
            raise InvalidInputError("theme", f"one of {', '.join(THEME_CHOICES)}")
        self.preference_updates.append(changes)
        current = self.preferences_value
        self.preferences_value = Preferences(
            language=changes.language or current.language,
            theme=changes.theme or current.theme,
            start_at_login=current.start_at_login
            if changes.start_at_login is None
            else changes.start_at_login,
        )
        return self.preferences_value
