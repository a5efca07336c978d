"""What the UI and the API read about tasks. Plain immutable values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class TaskView:
    id: str
    bot_id: str
    conversation_id: str
    title: str
    stage: str  # stage key, e.g. "working", "needs-you/answer", "ready"
    stage_label: str
    group: str  # working | needs | ended
    latest_line: str
    created_at: float
    updated_at: float
    tokens_in: int
    tokens_out: int
    spent_usd: float
    budget_usd: float
    # Costs priced in other currencies (a user's override), never added to USD; calls with no known price.
    spent_other: dict[str, float] = field(default_factory=dict)
    unpriced_calls: int = 0
    # Whether the model its working run talks to has a price (a user's own included); None when not known
    # (no run works now). An unpriced model's task says 「未定价」 from the start, not 「约 $0.00」 first.
    model_priced: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "botId": self.bot_id,
            "conversationId": self.conversation_id,
            "title": self.title,
            "stage": self.stage,
            "stageLabel": self.stage_label,
            "group": self.group,
            "latestLine": self.latest_line,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "tokensIn": self.tokens_in,
            "tokensOut": self.tokens_out,
            "spentUsd": self.spent_usd,
            "budgetUsd": self.budget_usd,
            "spentOther": self.spent_other,
            "unpricedCalls": self.unpriced_calls,
            "modelPriced": self.model_priced,
        }


@dataclass(frozen=True, slots=True)
class RunView:
    id: str
    cause: str
    state: str
    outcome: str
    error: str
    steps: int
    tokens_in: int
    tokens_out: int
    queued_at: float
    started_at: float
    ended_at: float
    cost_usd: float = 0.0
    cost_other: dict[str, float] = field(default_factory=dict)
    unpriced_calls: int = 0
    report: dict[str, Any] | None = None  # the run's Report, when it gave one
    # When the working run sent the model request it still waits on (wall clock); None when it waits on
    # none. The detail says 「等模型回复 · 12 秒」 from it, also after the run's first steps.
    model_wait_since: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cause": self.cause,
            "state": self.state,
            "outcome": self.outcome,
            "error": self.error,
            "steps": self.steps,
            "tokensIn": self.tokens_in,
            "tokensOut": self.tokens_out,
            "queuedAt": self.queued_at,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "costUsd": self.cost_usd,
            "costOther": self.cost_other,
            "unpricedCalls": self.unpriced_calls,
            "report": self.report,
            "modelWaitSince": self.model_wait_since,
        }


@dataclass(frozen=True, slots=True)
class TaskDetail:
    task: TaskView
    words: str  # the user's request, verbatim
    brief: str
    folder: str
    folder_bytes: int
    session_bytes: int
    report: dict[str, Any] | None
    runs: tuple[RunView, ...]
    # Retention (docs/retention.md): when the folder will be deleted (0: no date set) and when the task was
    # last used; 保留 (`keep`) clears the date and restarts the 30 idle days.
    cleanup_at: float = 0.0
    idle_since: float = 0.0
    # A goal task's rounds and criteria with their last verdicts (docs/goals.md); None without a goal.
    goal: dict[str, Any] | None = None
    # A planned task's phase and subtasks with their stage, spend and steps (docs/plans.md); None without.
    plan: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.task.to_json(),
            "origin": {"conversationId": self.task.conversation_id, "words": self.words},
            "brief": self.brief,
            "folder": self.folder,
            "folderBytes": self.folder_bytes,
            "sessionBytes": self.session_bytes,
            "report": self.report,
            "runs": [r.to_json() for r in self.runs],
            "cleanupAt": self.cleanup_at,
            "idleSince": self.idle_since,
            "goal": self.goal,
            "plan": self.plan,
        }
