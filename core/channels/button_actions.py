"""What a button under one of our messages does, on every platform that has them (Feishu's cards,
Telegram's inline keyboards, DingTalk's cards): the same needs-you actions as the desktop
(docs/attention.md), and a late answer for a question the task withdrew
(docs/channels.md#answers-and-follow-ups)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from core.errors import NotFoundError
from core.store import approvals as approval_rows
from core.store.database import Database
from core.translations import Language, text

ButtonAction = Literal["answer", "approve", "deny", "retry", "stop"]
# What happened, as the `channel_press.*` catalogue words it for the person who pressed.
Done = Literal["answered", "late", "approved", "denied", "retrying", "stopped"]


class PressActions(Protocol):
    """AttentionService, as a button uses it."""

    async def act(self, item_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]: ...


class PressTasks(Protocol):
    async def answer(self, question_id: str, answer: str) -> str: ...

    async def stop_task(self, task_id: str) -> object: ...


async def press(
    db: Database,
    actions: PressActions,
    tasks: PressTasks,
    action: ButtonAction,
    *,
    item_id: str = "",
    task_id: str = "",
    answer: str = "",
) -> Done:
    """Take the button's action; NotFoundError or ConflictError when what it was about is over."""
    if action == "answer":
        question_id = item_id.partition(":")[2]
        asked = await db.read(lambda s: approval_rows.get_approval(s, question_id))
        if asked is not None and asked.status == "withdrawn" and asked.task_id:
            await tasks.answer(asked.id, answer)  # a late answer: the task hears it
            return "late"
        await actions.act(item_id, "answer", {"answer": answer})
        return "answered"
    if action in ("approve", "deny"):
        await actions.act(item_id, action, {})
        return "approved" if action == "approve" else "denied"
    if action == "retry":
        await actions.act(item_id, "retry", {})
        return "retrying"
    await tasks.stop_task(task_id)
    return "stopped"


async def press_data(
    db: Database, actions: PressActions, tasks: PressTasks, data: str, lang: Language
) -> tuple[str, str]:
    """A button by its short data (`q:<question>:<n>`, `y:<id>`, `n:<id>`, `r:<task>`, `s:<task>`, as
    Telegram's keyboards and DingTalk's cards carry it): the action taken, then what to tell the person who
    pressed, and the line the message then shows in place of its buttons ('' leaves them). NotFoundError or
    ConflictError when what it was about is over."""
    kind, _, rest = data.partition(":")
    if kind == "q":
        question_id, _, index = rest.rpartition(":")
        asked = await db.read(lambda s: approval_rows.get_approval(s, question_id))
        if asked is None or not index.isdigit() or int(index) >= len(asked.options):
            raise NotFoundError("question", question_id)
        answer = asked.options[int(index)]
        done = await press(db, actions, tasks, "answer", item_id=f"question:{asked.id}", answer=answer)
        return text(lang, f"channel_press.{done}", answer=answer), text(
            lang, "telegram_button.chosen", chosen=answer
        )
    buttons: dict[str, tuple[ButtonAction, str]] = {
        "y": ("approve", f"approval:{rest}"),
        "n": ("deny", f"approval:{rest}"),
        "r": ("retry", f"task_failed:{rest}"),
        "s": ("stop", ""),
    }
    if kind not in buttons:
        return text(lang, "channel_press.unknown"), ""
    action, item_id = buttons[kind]
    done = await press(db, actions, tasks, action, item_id=item_id, task_id=rest)
    label = text(lang, f"telegram_button.{action}")
    return text(lang, f"channel_press.{done}"), text(lang, "telegram_button.chosen", chosen=label)
