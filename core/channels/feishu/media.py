"""Attachments that come in on Feishu (docs/channels.md#media-on-feishu): an image or file of a message,
fetched with the app's token from the message's resources and saved in the conversation's `inbox/` folder,
under the same safe, stable names as WeChat's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.channels.feishu.apps import FeishuApps
from core.channels.feishu.rest import FeishuError
from core.channels.wechat.media import MediaError, save
from core.store import channels as channel_rows
from core.store.database import Database


class FeishuMedia:
    def __init__(self, db: Database, apps: FeishuApps) -> None:
        self._db = db
        self._apps = apps

    async def fetch(
        self, channel_id: str, message_id: str, media: dict[str, Any], dest_dir: Path, *, stem: str
    ) -> Path:
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        if channel is None:
            raise MediaError("its channel was removed")
        key = str(media.get("file_key") or "")
        kind = "image" if media.get("type") == "image" else "file"
        if not key:
            raise MediaError("the message names no file")
        try:
            data = await (await self._apps.rest(channel)).resource(message_id, key, kind)
        except FeishuError as exc:
            raise MediaError(str(exc)) from exc
        name = str(media.get("file_name") or "")
        return await asyncio.to_thread(save, data, dest_dir, kind=kind, stem=stem, file_name=name)
