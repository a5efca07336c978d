"""Attachments of the platforms that fetch them with the channel's own credentials (docs/channels.md#media):
Feishu's by file key with the app's token, Telegram's by file id with the bot's token. Each is saved in the
conversation's `inbox/` folder under the same safe, stable names as WeChat's."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.bots.secret_store import SecretStore
from core.channels.feishu.apps import FeishuApps
from core.channels.feishu.media import FeishuMedia
from core.channels.telegram.config import base_urls, token_secret_name
from core.channels.telegram.fault import TelegramFault
from core.channels.telegram.loader import open_api
from core.channels.wechat.media import MAX_MEDIA_BYTES, MediaError, save
from core.store.database import Database


class PlatformMedia:
    def __init__(
        self, db: Database, feishu: FeishuApps, secrets: SecretStore, environ: Mapping[str, str]
    ) -> None:
        self._feishu = FeishuMedia(db, feishu)
        self._secrets = secrets
        self._environ = environ

    async def fetch(
        self, channel_id: str, message_id: str, media: dict[str, Any], dest_dir: Path, *, stem: str
    ) -> Path:
        if "telegram_file" in media:
            return await self._telegram(channel_id, media, dest_dir, stem=stem)
        return await self._feishu.fetch(channel_id, message_id, media, dest_dir, stem=stem)

    async def _telegram(self, channel_id: str, media: dict[str, Any], dest_dir: Path, *, stem: str) -> Path:
        token = await self._secrets.get(token_secret_name(channel_id))
        if not token:
            raise MediaError("the bot's token is no longer in the keyring")
        api = await open_api(token, base_urls(self._environ))
        try:
            data = await api.file(str(media["telegram_file"]), limit=MAX_MEDIA_BYTES)
        except TelegramFault as exc:
            raise MediaError(str(exc)) from exc
        finally:
            await api.close()
        kind = "image" if media.get("type") == "image" else "file"
        name = str(media.get("file_name") or "")
        return await asyncio.to_thread(save, data, dest_dir, kind=kind, stem=stem, file_name=name)
