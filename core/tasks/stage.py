"""The task stage (docs/task-stages.md): one user-visible state computed from stored facts, first matching row
wins.

A task never stores its stage. The caller gathers `StageFacts` from tasks, runs, inputs, approvals and
deliveries, and `task_stage` applies the table, so the stage can never drift from the facts behind it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.translations import as_language, text

StageGroup = Literal["ended", "needs", "working"]
REPORT_STATES = frozenset({"progress", "needs_you", "done", "failed"})


@dataclass(frozen=True, slots=True)
class Stage:
    """A row of the stage table: its key, group, and the catalogue key of its label."""

    row: int  # the stage table's row (1-9, docs/task-stages.md); callers may sort by it
    key: str
    group: StageGroup
    words: str  # `stage.<words>` in core's catalogue

    def label(self, lang: str) -> str:
        """The label in `lang`; any Chinese locale ('zh', 'zh_CN', 'zh-Hans') reads zh, anything else en."""
        return text(as_language(lang), f"stage.{self.words}")


STOPPED = Stage(1, "stopped", "ended", "stopped")
UNDELIVERED = Stage(2, "needs-you/delivery", "needs", "undelivered")
NEEDS_ANSWER = Stage(3, "needs-you/answer", "needs", "needs_answer")
# Same row and key as NEEDS_ANSWER: an approval changes only the words the person reads.
NEEDS_APPROVAL = Stage(3, "needs-you/answer", "needs", "needs_approval")
BUDGET = Stage(4, "needs-you/budget", "needs", "budget")
FAILED = Stage(5, "failed", "needs", "failed")
READY = Stage(6, "ready", "ended", "ready")  # ended, but a person's follow-up resumes it
QUEUED = Stage(7, "working/queued", "working", "queued")
ASKING = Stage(8, "working/asking", "working", "asking")
WORKING = Stage(9, "working", "working", "working")

ALL_STAGES: tuple[Stage, ...] = (
    STOPPED,
    UNDELIVERED,
    NEEDS_ANSWER,
    NEEDS_APPROVAL,
    BUDGET,
    FAILED,
    READY,
    QUEUED,
    ASKING,
    WORKING,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StageFacts:
    """What the stage depends on. Keyword-only and without defaults, so a caller can't forget a fact."""

    stopped: bool
    # The latest result, question or failure message has not reached the conversation: its delivery failed
    # 3 times, or it is held because the channel needs the person (WeChat window closed, no quota).
    undelivered: bool
    # An open approval, or an open question WITHOUT a default: the task can't go on without the person.
    awaiting_answer: bool
    # The open item of `awaiting_answer` is an approval; changes only the label.
    awaiting_approval: bool
    budget_stopped: bool  # a run stopped at the task budget and no budget was added since
    latest_report_state: str | None  # 'progress' | 'needs_you' | 'done' | 'failed' | None (no Report yet)
    launch_failed: bool  # the launch itself failed (no session or no first turn), with no Report to show
    # A person's input (answer, follow-up, retry, continue) arrived after the latest Report or launch
    # failure. Automatic inputs (job wake-ups, recovery notes, nudges) must not set it.
    person_input_since_report: bool
    run_active: bool  # a run is running or settling, i.e. holds a slot
    inputs_waiting: bool  # inputs not yet taken by the session, or runs queued for a slot
    question_with_default_open: bool  # an open question that has a default: asked, and the task goes on

    def __post_init__(self) -> None:
        if self.latest_report_state is not None and self.latest_report_state not in REPORT_STATES:
            raise ValueError(
                f"latest_report_state must be one of {sorted(REPORT_STATES)} or None, "
                f"not {self.latest_report_state!r}"
            )


def task_stage(f: StageFacts) -> Stage:
    """The stage table (docs/task-stages.md), first match wins.

    Rows 2-4 are lifted only by their own cause going away (the delivery goes out, the answer or approval
    is given, budget is added), which the caller reflects in the facts. Rows 5-6 describe the latest
    Report and give way to a person's input after it: that input starts a new run, so the task moves to
    row 7, 8 or 9. Automatic inputs never count, so a recovery or job wake-up can't hide a failure."""
    if f.stopped:
        return STOPPED
    if f.undelivered:
        return UNDELIVERED
    if f.awaiting_answer:
        return NEEDS_APPROVAL if f.awaiting_approval else NEEDS_ANSWER
    if f.budget_stopped:
        return BUDGET
    if not f.person_input_since_report:
        if f.latest_report_state == "failed" or f.launch_failed:
            return FAILED
        if f.latest_report_state == "done":
            return READY
    if f.inputs_waiting and not f.run_active:
        return QUEUED
    if f.run_active and f.question_with_default_open:
        return ASKING
    return WORKING


def is_waiting_for_person(stage_key: str) -> bool:
    """Whether a stored or reported stage key is in the needs-you group (rows 2-5).

    Read from the key's shape rather than a lookup, so a key written by an older version still answers."""
    return stage_key.startswith("needs-you/") or stage_key == FAILED.key


def stage_label(key: str, lang: str) -> str:
    """The label of a stage key in a language; the key itself when unknown (a newer version wrote it)."""
    stage = next((s for s in ALL_STAGES if s.key == key), None)
    return stage.label(lang) if stage is not None else key
