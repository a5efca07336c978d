"""A button pressed on one of our Feishu cards (docs/channels.md#card-buttons): the same actions as
needs-you on the desktop (answer, approve, deny, retry, stop), a toast for the person who pressed, and the
card changed so everyone sees what was chosen and nobody presses a second button.

Feishu shows an error unless the press is answered within 3 seconds, so the action gets PRESS_WAIT_S: done
by then, the toast says how it went; not, it says it is under way and the action goes on. Only the owner
and the people the owner allowed may press; a button on a question the task withdrew (it went on with its
default) is a late answer, as a quote of it would be; one about something that is over says so.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from core.channels.button_actions import PressActions, PressTasks
from core.channels.button_actions import press as press_button
from core.channels.feishu import cards
from core.channels.feishu.apps import FeishuApps
from core.channels.feishu.events import CardPress
from core.errors import ConflictError, ErrandError, NotFoundError
from core.store import approvals as approval_rows
from core.store import channels as channel_rows
from core.store import messages as msg_rows
from core.store import tasks as task_rows
from core.store.database import Database
from core.tasks.language import language_of
from core.translations import Language, text

log = logging.getLogger(__name__)

PRESS_WAIT_S = 2.0  # of Feishu's 3 s: the rest is the way back


@dataclass(frozen=True, slots=True)
class _Outcome:
    toast: str
    kind: str = "success"  # success | info | warning | error
    chosen: str = ""  # the card then shows this choice; "" leaves it
    gone: bool = False  # the card then says it is over


class CardPresses:
    def __init__(self, db: Database, feishu: FeishuApps, actions: PressActions, tasks: PressTasks) -> None:
        self._db = db
        self._feishu = feishu
        self._actions = actions
        self._tasks = tasks
        self._going: set[asyncio.Task[None]] = set()
        # Cards whose button did its work: a second press (before the card shows the choice, or after its
        # update failed) must not answer, approve or resume the task again.
        self._settled: set[str] = set()

    async def __call__(self, channel_id: str, press: CardPress) -> dict[str, Any]:
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        lang = await self._lang_of(press)
        if channel is None:
            return _toast(_say(lang, "gone"), "warning")
        if channel.owner and not channel.admits(press.operator):
            return _toast(_say(lang, "not_yours"), "warning")
        try:
            action = cards.parse_action(press.value)
        except cards.CardActionError as exc:
            log.warning("feishu channel %s: a card press with a bad value: %s", channel_id, exc)
            return _toast(_say(lang, "unknown"), "error")
        owner = not channel.owner or press.operator == channel.owner
        if press.message_id in self._settled and action.action not in ("detail", "revise"):
            return _toast(_say(lang, "already"), "info")
        doing = asyncio.get_running_loop().create_task(self._do(channel.id, press, action, lang, owner))
        try:
            outcome = await asyncio.wait_for(asyncio.shield(doing), PRESS_WAIT_S)
        except TimeoutError:
            self._keep(doing)
            return _toast(_say(lang, "under_way"), "info")
        return _toast(outcome.toast, outcome.kind)

    def _keep(self, doing: asyncio.Task[_Outcome]) -> None:
        async def finish() -> None:
            await asyncio.gather(doing, return_exceptions=True)

        kept = asyncio.get_running_loop().create_task(finish())
        self._going.add(kept)
        kept.add_done_callback(self._going.discard)

    async def _do(
        self, channel_id: str, press: CardPress, action: cards.CardAction, lang: Language, owner: bool
    ) -> _Outcome:
        try:
            outcome = await self._act(channel_id, press, action, lang)
        except (NotFoundError, ConflictError):
            outcome = _Outcome(_say(lang, "gone"), "warning", gone=True)
        except ErrandError as exc:
            outcome = _Outcome(str(exc), "error")
        if outcome.chosen or outcome.gone:
            self._settled.add(press.message_id)
            await self._settle_card(channel_id, press, action, outcome, lang, owner)
        return outcome

    async def _act(
        self, channel_id: str, press: CardPress, action: cards.CardAction, lang: Language
    ) -> _Outcome:
        kind = action.action
        if kind in ("answer", "approve", "deny", "retry", "stop"):
            done = await press_button(
                self._db,
                self._actions,
                self._tasks,
                kind,
                item_id=action.item_id,
                task_id=action.task_id,
                answer=action.answer,
            )
            chosen = action.answer if kind == "answer" else text(lang, f"feishu_card.{kind}")
            return _Outcome(_say(lang, done, answer=action.answer), chosen=chosen)
        if kind == "detail":
            await self._send_detail(channel_id, press, action.task_id, lang)
            return _Outcome(_say(lang, "detail_below"), "info")
        return _Outcome(_say(lang, "revise_hint"), "info")  # revise: say what to change in a reply

    async def _send_detail(self, channel_id: str, press: CardPress, task_id: str, lang: Language) -> None:
        """The task's whole report, under its card (the card holds only its summary)."""
        task = await self._db.read(lambda s: task_rows.get_task(s, task_id))
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        if task is None or channel is None:
            raise NotFoundError("task", task_id)
        report = task.report.strip() or _say(lang, "no_detail")
        words = f"「{task.title}」\n{report}\n{_say(lang, 'folder', folder=task.folder)}"
        rest = await self._feishu.rest(channel)
        await rest.reply(
            press.message_id, "text", cards.text_content(words), uuid=f"detail-{press.event_id}"[:50]
        )

    async def _settle_card(
        self,
        channel_id: str,
        press: CardPress,
        action: cards.CardAction,
        outcome: _Outcome,
        lang: Language,
        owner: bool,
    ) -> None:
        """Show on the card what was chosen, and by whom; or that it is over."""
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        card = await self._db.read(lambda s: _card_again(s, press.message_id, action, lang))
        if channel is None:
            return
        if card is None:  # what it was about is gone (a deleted task): the card says only that it is over
            title = {"tag": "plain_text", "content": _say(lang, "gone")}
            card = {
                "config": {"wide_screen_mode": True, "update_multi": True},
                "header": {"title": title, "template": "grey"},
                "elements": [],
            }
            outcome = _Outcome(outcome.toast, outcome.kind, gone=True)
        by = _say(lang, "by_owner") if owner else press.operator
        settled = (
            cards.gone_card(card, lang=lang)
            if outcome.gone
            else cards.chosen_card(card, chosen=outcome.chosen, by=by, lang=lang)
        )
        try:
            rest = await self._feishu.rest(channel)
            await rest.patch(press.message_id, cards.card_content(settled))
        except Exception as exc:  # the action was taken; only the card still shows its buttons
            log.warning("feishu channel %s: could not update card %s: %s", channel_id, press.message_id, exc)

    async def _lang_of(self, press: CardPress) -> Language:
        def read(s: Any) -> str:
            # The conversation's language, as the card was written in: the person's words say it.
            message = msg_rows.find_by_channel_ref_anywhere(s, press.message_id)
            if message is None:
                return ""
            recent = " ".join(msg_rows.recent_user_texts(s, message.conversation_id, 5))
            return f"{recent} {message.text}"

        return language_of(await self._db.read(read))


def _card_again(s: Any, message_id: str, action: cards.CardAction, lang: Language) -> dict[str, Any] | None:
    """The card as it was sent, built again from what it was about."""
    if action.item_id.startswith(("question:", "approval:")):
        asked = approval_rows.get_approval(s, action.item_id.partition(":")[2])
        if asked is None:
            return None
        task = task_rows.get_task(s, asked.task_id) if asked.task_id else None
        title = task.title if task is not None else ""
        if asked.kind == "question":
            return cards.question_card(
                title=title,
                question=asked.text,
                item_id=f"question:{asked.id}",
                options=asked.options,
                default=asked.default,
                lang=lang,
            )
        return cards.approval_card(title=title, what=asked.text, item_id=f"approval:{asked.id}", lang=lang)
    task = task_rows.get_task(s, action.task_id) if action.task_id else None
    if task is None:
        return None
    message = msg_rows.find_by_channel_ref_anywhere(s, message_id)
    reason = message.text if message is not None else ""
    return cards.failure_card(
        title=task.title, reason=reason, task_id=task.id, item_id=f"task_failed:{task.id}", lang=lang
    )


def _toast(content: str, kind: str = "success") -> dict[str, Any]:
    return {"toast": {"type": kind, "content": content}}


def _say(lang: Language, key: str, **fields: str) -> str:
    return text(lang, f"channel_press.{key}", **fields)
