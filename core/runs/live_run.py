"""What the driver knows of a run while it works: its session, its steps, spend, Report and timers.

It lives from the moment the run starts until it ends; the stored run row is the durable record. `work` is
what only the kind of run cares about (the task and its budget, or the rule and its mode).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from core.activity_steps import ActivityLog
from core.cost.meter import RunCost
from core.runs.running_time import RunningTime
from core.tasks.report import Report

if TYPE_CHECKING:
    from core.agent.session import AgentSession

W = TypeVar("W")


@dataclass
class LiveRun(Generic[W]):
    run_id: str
    bot_id: str
    session: AgentSession
    work: W
    running: RunningTime
    base_url: str = ""  # the model's address, which prices its responses
    activity: ActivityLog = field(default_factory=ActivityLog)
    report: Report | None = None  # the latest Report that ends the run
    error: str = ""  # the last turn's error, when it ended in one (English, as the API reads it)
    # The same error in each language a person may read it ({"zh": ..., "en": ...}); empty: only `error`.
    error_words: Mapping[str, str] = field(default_factory=dict)
    # When its current model request was sent (wall clock), until the answer (or the turn's end) arrives;
    # None while it is not waiting on the model. The task detail says 「等模型回复 · 12 秒」 from it.
    model_wait_since: float | None = None
    nudged: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    cost: RunCost = field(default_factory=RunCost)
    over_budget: bool = False
    # Stopped at a limit or by a person: its cancelled turn must not be nudged or settled.
    stopping: bool = False
    checking: bool = False  # one look at whether it is finished at a time; later events look again
    # Held while the run decides whether it is finished, and while inputs are handed to it: an input
    # arriving as the run ends either goes in before the decision or finds the run gone.
    deciding: asyncio.Lock = field(default_factory=asyncio.Lock)
    settle_timer: asyncio.Task[None] | None = None
    cap_timer: asyncio.Task[None] | None = None
