"""What the UI and the API read about rules. Plain immutable values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.activity_steps import ActivityStep
from core.translations import as_language, has_text, text


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
    trigger: dict[str, Any] = field(default_factory=lambda: {"kind": "schedule"})
    # Budgets (docs/cost.md#rule-budgets): the estimated cost of this calendar month's runs (in the rule's
    # zone), in USD.
    month_cost_usd: float = 0.0
    month_budget_usd: float = 3.0
    run_budget_usd: float = 0.10

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
            "trigger": self.trigger,
            "monthCostUsd": self.month_cost_usd,
            "monthBudgetUsd": self.month_budget_usd,
            "runBudgetUsd": self.run_budget_usd,
        }


@dataclass(frozen=True, slots=True)
class RuleVersionView:
    """One instruction a rule has had; runs record the version they ran."""

    version: int
    instruction: str
    created_at: float

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "instruction": self.instruction, "createdAt": self.created_at}


@dataclass(frozen=True, slots=True)
class PausedRule:
    """A rule the host paused (needs-you `rule_paused`): why, the last error and since when."""

    rule_id: str
    bot_id: str
    conversation_id: str
    title: str
    reason: str  # failures | budget
    detail: str  # the last failed run's error
    failures: int
    since: float


@dataclass(frozen=True, slots=True)
class ObserveReady:
    """A rule in observe with enough good runs on its version (needs-you `observe_ready`)."""

    rule_id: str
    bot_id: str
    conversation_id: str
    title: str
    version: int
    observed: int  # good observed runs on this version
    line: str  # the latest one's run-log line, e.g. 「本会发送:“…”」
    since: float


def skip_line(reason: str, lang: str) -> str:
    """A skipped run's reason key (missed, paused, overlap, late) in words."""
    key = f"rule_run.skipped.{reason}"
    return text(as_language(lang), key) if has_text(key) else reason


@dataclass(frozen=True, slots=True)
class RunLogEntry:
    """One line of a rule's run log (docs/runs.md#the-run-log): time, mode, outcome, and what it said,
    would have said or why it was skipped. The Report, the version, the permission and the steps are there
    for the detail (expanding a row)."""

    id: str
    time: float  # when it started, or when it was queued (skipped runs: when it was due)
    mode: str  # act | observe
    cause: str  # schedule | manual
    state: str  # queued | running | settling | ended
    outcome: str  # '' while live; done | failed | skipped | stopped | interrupted
    version: int  # the rule version it ran under
    line: str  # the one line shown, in the asked language
    reason: str  # skipped: missed | paused | overlap; failed: the error
    said: str  # act: the message pushed to the user
    would: str  # observe: what it would have said
    report: dict[str, Any] | None
    cost_usd: float
    # The preset it ran with: read-only (observe), else the act cap (see core.rules.run_log.log_entry).
    permission: str = ""
    steps: tuple[ActivityStep, ...] = ()  # its 处理过程, from the run's stored activity

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": self.time,
            "mode": self.mode,
            "cause": self.cause,
            "state": self.state,
            "outcome": self.outcome,
            "version": self.version,
            "line": self.line,
            "reason": self.reason,
            "said": self.said,
            "would": self.would,
            "report": self.report,
            "costUsd": self.cost_usd,
            "permission": self.permission,
            "steps": [step.to_json() for step in self.steps],
        }


def run_line(
    *, state: str, outcome: str, mode: str, reason: str, said: str, would: str, would_do: str, lang: str
) -> str:
    """The run's line in words (docs/runs.md#the-run-log): 「本会发送:“…”」, 「失败:…」, 「跳过:电脑没开」,
    ..."""
    language = as_language(lang)
    if state in ("queued",):
        return text(language, "rule_run.queued")
    if state in ("running", "settling"):
        return text(language, "rule_run.running")
    if outcome == "skipped":
        return skip_line(reason, lang)
    if outcome == "failed":
        return text(language, "rule_run.failed", text=reason or "?")
    if outcome in ("stopped", "interrupted"):
        return text(language, f"rule_run.{outcome}")
    if mode == "observe":
        if would:
            return text(language, "rule_run.would_send", text=would)
        if would_do:
            return text(language, "rule_run.would_do", text=would_do)
        return text(language, "rule_run.would_quiet")
    if said:
        return text(language, "rule_run.sent", text=said)
    if outcome == "done":
        return text(language, "rule_run.quiet")
    return text(language, "rule_run.other", text=outcome)
