"""Events every agent session emits on the runtime's single subscription.

Activity steps (docs/task-stages.md#activity-steps), chat replies and later task runs are all built from
these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

SessionStatus = Literal["idle", "running"]
TurnOutcome = Literal["done", "cancelled", "error"]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0  # all input, cached included
    output_tokens: int = 0
    cache_read_tokens: int = 0  # the part of input_tokens the provider read from its prompt cache


@dataclass(frozen=True, slots=True)
class StatusChanged:
    session_id: str
    status: SessionStatus


@dataclass(frozen=True, slots=True)
class TurnStarted:
    session_id: str
    turn_id: str


@dataclass(frozen=True, slots=True)
class TurnEnded:
    session_id: str
    turn_id: str
    outcome: TurnOutcome
    error: str = ""  # English, as the API and scripts read it
    # The error in each language a person may read it in ({"zh": ..., "en": ...}); empty when only `error`.
    error_words: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InputTaken:
    """The session put this input into the model's context: the "taken" marker
    (docs/recovery.md#what-is-written-when)."""

    session_id: str
    turn_id: str
    input_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ModelRequestStarted:
    session_id: str
    turn_id: str
    step: int


@dataclass(frozen=True, slots=True)
class TextDelta:
    session_id: str
    turn_id: str
    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One model response finished: its text (may be empty when it only calls tools), model and usage, and
    the reasoning it streamed before answering (empty when it showed none)."""

    session_id: str
    turn_id: str
    step: int
    text: str
    model: str
    usage: Usage
    duration_s: float
    tool_calls: int
    reasoning: str = ""


@dataclass(frozen=True, slots=True)
class ToolCall:
    session_id: str
    turn_id: str
    call_id: str
    name: str
    args: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    session_id: str
    turn_id: str
    call_id: str
    name: str
    ok: bool
    output: str
    duration_s: float
    stopped: bool = False  # the turn was stopped while the call ran: its effects may be partial


@dataclass(frozen=True, slots=True)
class GuardDecided:
    """The guard refused a call, or let one through by a person's allowCommands entry (docs/guard.md).
    Emitted before the call's ToolResult."""

    session_id: str
    call_id: str
    tool: str
    decision: Literal["allow", "deny"]
    rule: str
    reason: str
    overrode: str = ""
    target: str = ""


@dataclass(frozen=True, slots=True)
class JobStarted:
    session_id: str
    job_id: str
    command: str


@dataclass(frozen=True, slots=True)
class JobEnded:
    session_id: str
    job_id: str
    command: str
    status: Literal["completed", "failed", "killed"]
    exit_code: int | None


AgentEvent = (
    StatusChanged
    | TurnStarted
    | TurnEnded
    | InputTaken
    | ModelRequestStarted
    | TextDelta
    | AssistantMessage
    | ToolCall
    | ToolResult
    | GuardDecided
    | JobStarted
    | JobEnded
)
