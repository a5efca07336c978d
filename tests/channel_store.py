"""A stored WeChat channel of a new bot, as a login would start one, for tests of the channel layer."""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.ids import new_id
from core.store import bots
from core.store import channels as channel_rows
from core.store.database import Database


async def new_wechat_channel(db: Database) -> str:
    """The id of a new `connecting` WeChat channel of a new bot (no account yet)."""

    def make(s: Session) -> str:
        bot = bots.insert_bot(s, id=new_id("b"), name="Bot", workspace="/ws", now=1.0)
        return channel_rows.insert_channel(s, id=new_id("ch"), bot_id=bot.id, kind="wechat", now=1.0).id

    return await db.write(make)
