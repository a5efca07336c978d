"""A button pressed on one of our DingTalk cards (docs/channels.md#dingtalk-messages): the same needs-you
action as the desktop, then the card changed to say what was chosen, its buttons gone. Only the owner and
the people allowed may press; a press by anyone else, or on something that is over, changes nothing (the
card then says so, where it can)."""

from __future__ import annotations

import logging

from core.channels.button_actions import PressActions, PressTasks, press_data
from core.channels.dingtalk import cards
from core.channels.dingtalk.messages import DingTalkPress
from core.channels.dingtalk.openapi import DingTalkApi, DingTalkError
from core.errors import ConflictError, ErrandError, NotFoundError
from core.store import channels as channel_rows
from core.store import messages as msg_rows
from core.store import tasks as task_rows
from core.store.database import Database
from core.tasks.language import language_of
from core.translations import Language, text

log = logging.getLogger(__name__)


class DingTalkPresses:
    def __init__(self, db: Database, actions: PressActions, tasks: PressTasks) -> None:
        self._db = db
        self._actions = actions
        self._tasks = tasks

    async def __call__(self, channel_id: str, api: DingTalkApi, press: DingTalkPress) -> None:
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        found = await self._db.read(lambda s: msg_rows.find_by_channel_ref_anywhere(s, press.card_biz_id))
        lang: Language = language_of(found.text if found is not None else "")
        if channel is None or found is None:
            log.info("dingtalk channel %s: a press on card %s we do not know", channel_id, press.card_biz_id)
            return
        if channel.owner and not channel.admits(press.user_id):
            log.info("dingtalk channel %s: %s may not press here", channel_id, press.user_id)
            return
        try:
            said, chosen = await press_data(self._db, self._actions, self._tasks, press.action, lang)
        except (NotFoundError, ConflictError):
            said, chosen = "", text(lang, "channel_press.gone")
        except ErrandError as exc:
            log.info("dingtalk channel %s: a press was refused: %s", channel_id, exc)
            return
        if not chosen:
            log.info("dingtalk channel %s: a press did nothing: %s", channel_id, said)
            return
        task = await self._db.read(lambda s: task_rows.get_task(s, found.task_id) if found.task_id else None)
        title = task.title if task is not None else "Errand"
        done = cards.settled(cards.card(title, found.text), chosen)
        try:
            await api.update_card(press.card_biz_id, cards.card_data(done))
        except DingTalkError as exc:  # the action was taken; only the buttons stay
            log.info("dingtalk channel %s: could not update card %s: %s", channel_id, press.card_biz_id, exc)
