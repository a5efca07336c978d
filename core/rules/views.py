"""What the UI and the API read about rules. Plain immutable values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RuleView:
    id: str
    bot_id: str
    conversation_id: str  # where the rule's results are delivered
    title: str
    instruction: str  # the user's words, verbatim
    kind: str  # check | remind
    mode: str  # off | observe | act
    schedule: dict[str, Any]  # the structured schedule, as stored
    schedule_words: str  # the schedule shown back in words, e.g. 「每个工作日 08:00(Asia/Shanghai)」
    tz: str
    version: int
    next_run_at: float  # epoch seconds; 0 = it will not fire again
    next_run_iso: str  # the same in the rule's zone; '' when there is none
    paused_reason: str  # '' | failures | budget
    created_at: float
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "botId": self.bot_id,
            "conversationId": self.conversation_id,
            "title": self.title,
            "instruction": self.instruction,
            "kind": self.kind,
            "mode": self.mode,
            "schedule": self.schedule,
            "scheduleWords": self.schedule_words,
            "tz": self.tz,
            "version": self.version,
            "nextRunAt": self.next_run_at,
            "nextRunIso": self.next_run_iso,
            "pausedReason": self.paused_reason,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }


@dataclass(frozen=True, slots=True)
class RuleVersionView:
    """One instruction a rule has had; runs record the version they ran."""

    version: int
    instruction: str
    created_at: float

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "instruction": self.instruction, "createdAt": self.created_at}
