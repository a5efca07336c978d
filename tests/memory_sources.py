"""A bot and the places its notes come from (a conversation, a task, a rule), stored for memory's UI tests
and renders: the fake bot facade's bot, with the same ids in the database."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from core.store import bots as bot_rows
from core.store import conversations as conv_rows
from core.store import rules as rule_rows
from core.store import tasks as task_rows

BOT = "bot-1"
CONVERSATION = "c_0a1b2c3d4e5f"
TASK = "t_0a1b2c3d4e5f"
RULE = "r_0a1b2c3d4e5f"


@dataclass(frozen=True, slots=True)
class Titles:
    conversation: str = "Weekly report"
    task: str = "GPU prices"
    rule: str = "Watch X"


def seed_sources(s: Session, workspace: Path, now: float, titles: Titles = Titles(), tz: str = "UTC") -> None:
    bot_rows.insert_bot(s, id=BOT, name="天天", workspace=str(workspace), now=now)
    conv_rows.insert_conversation(s, id=CONVERSATION, bot_id=BOT, title=titles.conversation, now=now)
    task_rows.insert_task(
        s,
        id=TASK,
        bot_id=BOT,
        conversation_id=CONVERSATION,
        title=titles.task,
        brief="Compare three clouds",
        session_id=f"task-{TASK}",
        folder=str(workspace / "tasks" / "gpu"),
        permission="workspace-write",
        budget_usd=1.0,
        now=now,
    )
    rule_rows.insert_rule(
        s,
        id=RULE,
        bot_id=BOT,
        conversation_id=CONVERSATION,
        title=titles.rule,
        instruction="Every morning, check the price of X",
        schedule={"kind": "daily", "time": "08:00"},
        tz=tz,
        now=now,
    )
