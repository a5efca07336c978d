"""Bots: their settings, workspace folder, model and permission. The default bot is made on first start."""

from __future__ import annotations

import asyncio
import builtins
import logging
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from sqlalchemy.orm import Session

from core.agent.model_config import ModelConfig
from core.agent.sandbox import Permission, Preset
from core.bots.connection_test import check_connection
from core.bots.local_models import DEFAULT_OLLAMA_URL
from core.bots.model_images import images_by_default
from core.bots.presets import ModelPresets
from core.bots.secret_store import FileFallback, SecretStore, SecretStoreUnavailableError
from core.bots.settings_changes import settings_changes
from core.bots.validation import (
    MAX_NAME,
    validate_api_key,
    validate_base_url,
    validate_images,
    validate_model_name,
    validate_name,
    validate_preset,
)
from core.bots.views import BotUpdate, BotView, ConnectionCheck, ModelPreset
from core.bus import EventBus
from core.changes import BotsChanged
from core.clock import Clock
from core.errors import InvalidInputError, NotFoundError, UnavailableError
from core.ids import new_id
from core.store import bots as bot_rows
from core.store.bots import BotRecord
from core.store.database import Database
from core.translations import Language

log = logging.getLogger(__name__)

DEFAULT_BOT_NAME = "Errand"
__all__ = [
    "DEFAULT_BOT_NAME",
    "MAX_NAME",
    "BackgroundSettingsChanged",
    "BotService",
    "HeldPushes",
    "validate_base_url",
    "validate_name",
    "validate_preset",
]


@dataclass(frozen=True, slots=True)
class BackgroundSettingsChanged:
    """A bot's task slots, pause or quiet hours changed: the task runner looks again (a queued run may
    start). Published before the service lets held pushes go (`HeldPushes.flush`)."""

    bot_id: str


class HeldPushes(Protocol):
    """What waits to be delivered (the Outbox): looked at again when quiet hours or a pause changed."""

    async def flush(self) -> int: ...


_BACKGROUND_FIELDS = frozenset({"task_slots", "paused", "quiet_start", "quiet_end"})


def _key_name(bot_id: str) -> str:
    return f"bot:{bot_id}:api-key"


class BotService:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        data_dir: Path,
        secrets: SecretStore,
        model_override: ModelConfig | None = None,
        *,
        held_pushes: HeldPushes,
        ollama_url: str = DEFAULT_OLLAMA_URL,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._data_dir = data_dir
        self._secrets = secrets
        # From ERRAND_MODEL_BASE_URL / ERRAND_MODEL / ERRAND_API_KEY: the default bot's, never stored.
        self._override = model_override
        self.presets = ModelPresets(ollama_url)
        self._held_pushes = held_pushes

    def workspace_of(self, bot_id: str) -> Path:
        return self._data_dir / "bots" / bot_id / "workspace"

    async def _view(self, record: BotRecord) -> BotView:
        config = await self.model_config_of(record)
        return BotView(
            id=record.id,
            name=record.name,
            workspace=record.workspace,
            model_provider=record.model_provider,
            model_base_url=config.base_url,
            model_name=config.model,
            has_api_key=bool(config.api_key),
            preset=record.preset,
            is_default=record.is_default,
            created_at=record.created_at,
            avatar=record.avatar,
            task_slots=record.task_slots,
            quiet_start=record.quiet_start,
            quiet_end=record.quiet_end,
            paused=record.paused,
            window_nudge=record.window_nudge,
            images=config.images,
            images_chosen=record.model_images,
        )

    async def ensure_default(self) -> BotView:
        record = await self._db.read(bot_rows.default_bot)
        if record is None:
            bot_id = new_id("b")
            workspace = self.workspace_of(bot_id)
            await asyncio.to_thread(workspace.mkdir, parents=True, exist_ok=True)
            now = self._clock.time()

            def insert(s: Session) -> BotRecord:
                return bot_rows.insert_bot(
                    s, id=bot_id, name=DEFAULT_BOT_NAME, workspace=str(workspace), now=now, is_default=True
                )

            record = await self._db.write(insert)
            self._bus.publish(BotsChanged())
        return await self._view(record)

    async def names(self) -> dict[str, str]:
        """Bot id -> name, without touching the keyring (lists refresh often)."""
        return {r.id: r.name for r in await self._db.read(bot_rows.list_bots)}

    async def list(self) -> list[BotView]:
        return [await self._view(r) for r in await self._db.read(bot_rows.list_bots)]

    async def _record(self, bot_id: str) -> BotRecord:
        record = await self._db.read(lambda s: bot_rows.get_bot(s, bot_id))
        if record is None:
            raise NotFoundError("bot", bot_id)
        return record

    async def get(self, bot_id: str) -> BotView:
        return await self._view(await self._record(bot_id))

    async def default_id(self) -> str:
        return (await self.ensure_default()).id

    async def create(
        self,
        name: str,
        *,
        base_url: str = "",
        model: str = "",
        api_key: str | None = None,
        preset: str = Preset.WORKSPACE_WRITE.value,
        images: bool | None = None,
    ) -> BotView:
        """`images` None: as the model is known to (docs/models.md#images)."""
        name = validate_name(name)
        base_url = validate_base_url(base_url)
        preset = validate_preset(preset)
        model = validate_model_name(model)
        api_key = validate_api_key(api_key) if api_key else ""
        model_images = None if images is None else validate_images(images)
        bot_id = new_id("b")
        key_ref = ""
        if api_key:
            try:
                await self._secrets.set(_key_name(bot_id), api_key)
            except SecretStoreUnavailableError as exc:
                raise UnavailableError(str(exc), key=exc.key) from exc
            key_ref = _key_name(bot_id)
        workspace = self.workspace_of(bot_id)
        now = self._clock.time()

        def insert(s: Session) -> BotRecord:
            return bot_rows.insert_bot(
                s,
                id=bot_id,
                name=name,
                workspace=str(workspace),
                now=now,
                model_base_url=base_url,
                model_name=model,
                api_key_ref=key_ref,
                preset=preset,
                model_images=model_images,
            )

        try:
            await asyncio.to_thread(workspace.mkdir, parents=True, exist_ok=True)
            record = await self._db.write(insert)
        except Exception:
            # A bot that was not made leaves neither a folder nor a key behind.
            await asyncio.to_thread(shutil.rmtree, workspace.parent, True)
            if key_ref:
                await self._secrets.delete(key_ref)
            raise
        self._bus.publish(BotsChanged())
        return await self._view(record)

    # ---- settings -----------------------------------------------------------------------------------

    async def update(self, bot_id: str, changes: BotUpdate) -> BotView:
        fields = settings_changes(changes)  # every field checked before anything is touched
        record = await self._record(bot_id)
        if changes.api_key is not None:
            fields["api_key_ref"] = await self._store_key(bot_id, changes.api_key.strip(), record)
        now = self._clock.time()
        if fields:
            record = await self._db.write(lambda s: bot_rows.update_bot(s, bot_id, now=now, **fields))
        self._bus.publish(BotsChanged())
        if _BACKGROUND_FIELDS & fields.keys():
            # The task runner looks again (a queued run may start), then the outbox (a held push may go).
            self._bus.publish(BackgroundSettingsChanged(bot_id))
            await self._flush_held(bot_id)
        return await self._view(record)

    async def _store_key(self, bot_id: str, key: str, record: BotRecord) -> str:
        """Put the key in the secret store (or remove it) and return the reference the row keeps."""
        name = _key_name(bot_id)
        try:
            if key:
                await self._secrets.set(name, key)
                return name
            await self._secrets.delete(record.api_key_ref or name)
        except SecretStoreUnavailableError as exc:
            raise UnavailableError(str(exc), key=exc.key) from exc
        return ""

    async def keep_keys_in_file(self) -> None:
        """The person chose the private file over a keyring that is not there (docs/desktop.md#settings).
        Raises UnavailableError when this store offers no file."""
        if not isinstance(self._secrets, FileFallback):
            raise UnavailableError("This secret store cannot keep keys in a file.")
        await self._secrets.keep_in_file()

    async def _flush_held(self, bot_id: str) -> None:
        try:
            await self._held_pushes.flush()
        except Exception:
            # The settings are stored; the outbox looks again on its next wake anyway.
            log.exception("held pushes failed to go after bot %s's settings changed", bot_id)

    async def test_connection(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        bot_id: str | None = None,
        lang: Language = "zh",
    ) -> ConnectionCheck:
        base_url = validate_base_url(base_url)
        if not base_url:
            raise InvalidInputError(
                "baseUrl", "is empty; enter the model's base URL, e.g. https://api.deepseek.com/v1"
            )
        model = validate_model_name(model)
        if not model:
            raise InvalidInputError("model", "is empty; enter a model name, e.g. deepseek-chat")
        if api_key is None:
            api_key = (await self.model_config(bot_id)).api_key if bot_id else ""
        api_key = validate_api_key(api_key)
        return await check_connection(base_url, model, api_key, clock=self._clock, lang=lang)

    async def model_presets(self, lang: Language = "zh") -> builtins.list[ModelPreset]:
        return await self.presets.list(lang)

    # ---- model and permission -----------------------------------------------------------------------

    async def model_config_of(self, record: BotRecord) -> ModelConfig:
        config = ModelConfig(
            base_url=record.model_base_url, model=record.model_name, provider=record.model_provider
        )
        if record.api_key_ref:
            config = replace(config, api_key=await self._secrets.get(record.api_key_ref) or "")
        if record.is_default and self._override is not None:
            o = self._override
            config = replace(
                config,
                base_url=o.base_url or config.base_url,
                model=o.model or config.model,
                api_key=o.api_key or config.api_key,
            )
        # The person's choice, else what the model (as the environment may have set it) is known to take;
        # ERRAND_MODEL_IMAGES=1 turns images on for the default bot.
        chosen = record.model_images
        images = images_by_default(config.base_url, config.model) if chosen is None else chosen
        if record.is_default and self._override is not None and self._override.images:
            images = True
        return replace(config, images=images)

    async def model_config(self, bot_id: str) -> ModelConfig:
        return await self.model_config_of(await self._record(bot_id))

    async def permission(self, bot_id: str, *, preset: str | None = None) -> Permission:
        """The bot's permission; `preset` overrides the bot's own (a task's snapshot)."""
        record = await self._record(bot_id)
        return Permission(
            preset=Preset.parse(preset or record.preset),
            workspace=Path(record.workspace),
            # The app's own data (database, API token, other bots) is never readable by tools.
            denied=tuple(
                self._data_dir / name
                for name in (
                    "errand.db",
                    "errand.db-wal",
                    "errand.db-shm",
                    "api.json",
                    "secrets.json",
                    "sessions",
                    "logs",
                )
            ),
        )
