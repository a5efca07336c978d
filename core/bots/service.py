"""Bots: their settings, workspace folder, model and permission. The default bot is made on first start."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from sqlalchemy.orm import Session

from core.agent.model_config import ModelConfig
from core.agent.sandbox import Permission, Preset
from core.bots.secret_store import SecretStore, SecretStoreUnavailableError
from core.bots.views import BotView
from core.bus import EventBus
from core.clock import Clock
from core.errors import InvalidInputError, NotFoundError, UnavailableError
from core.events import BotsChanged
from core.ids import new_id
from core.store import bots as bot_rows
from core.store.bots import BotRecord
from core.store.database import Database

DEFAULT_BOT_NAME = "Errand"
MAX_NAME = 60


def _key_name(bot_id: str) -> str:
    return f"bot:{bot_id}:api-key"


def validate_base_url(value: str) -> str:
    value = value.strip()
    if not value:
        return ""
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise InvalidInputError(
            "baseUrl", f"{value!r} is not an http(s) URL, e.g. https://api.deepseek.com/v1"
        )
    return value.rstrip("/")


def validate_name(value: str) -> str:
    value = value.strip()
    if not value:
        raise InvalidInputError("name", "must not be empty")
    if len(value) > MAX_NAME:
        raise InvalidInputError("name", f"must be at most {MAX_NAME} characters")
    return value


def validate_preset(value: str) -> str:
    try:
        return Preset.parse(value).value
    except ValueError as exc:
        raise InvalidInputError("preset", str(exc)) from exc


class BotService:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        data_dir: Path,
        secrets: SecretStore,
        model_override: ModelConfig | None = None,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._data_dir = data_dir
        self._secrets = secrets
        # From ERRAND_MODEL_BASE_URL / ERRAND_MODEL / ERRAND_API_KEY: the default bot's, never stored.
        self._override = model_override

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
    ) -> BotView:
        name = validate_name(name)
        base_url = validate_base_url(base_url)
        preset = validate_preset(preset)
        model = model.strip()
        bot_id = new_id("b")
        key_ref = ""
        if api_key:
            try:
                await self._secrets.set(_key_name(bot_id), api_key)
            except SecretStoreUnavailableError as exc:
                raise UnavailableError(str(exc)) from exc
            key_ref = _key_name(bot_id)
        workspace = self.workspace_of(bot_id)
        await asyncio.to_thread(workspace.mkdir, parents=True, exist_ok=True)
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
            )

        record = await self._db.write(insert)
        self._bus.publish(BotsChanged())
        return await self._view(record)

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
        return config

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
