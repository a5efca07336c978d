"""Runs of rules (docs/runs.md#rule-runs): one firing of a rule, from the schedule or a person's "run now".

- A reminder (`kind == "remind"`) has no model turn: its words go through the outbox to the rule's
  conversation, and the run ends `done`. It always acts.
- A check takes a background slot on the same lane as task runs (TaskRunner.serve_rule_runs), so the
  per-bot and overall caps hold for both. It gets a fresh session `rule-<rule>-<n>` in the rule's folder,
  with the instruction verbatim and the last Reports of the rule in its prompt, and reports with
  `task_report`. In `observe` it runs read-only without the writing tools, its approvals are refused and it
  tells nobody anything: what it would have said is recorded on the run. In `act` a non-empty message is
  pushed to the rule's conversation.
A check's lifecycle (settling, the one nudge, its budget and time cap) is core.runs.driver's; this module
says what it means for a rule. Three failed runs in a row pause the rule (RuleService.record_outcome).
Writes to runs of rules go through here; to rules through RuleService.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from pydantic import Field
from sqlalchemy.orm import Session

from core.agent.model_config import DEFAULT_RETRY
from core.agent.sandbox import Permission, Preset
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import SessionKind, ToolContext, ToolError, ToolSpec
from core.bots.service import BotService
from core.bus import EventBus
from core.changes import RuleChanged
from core.clock import Clock
from core.cost.meter import RunCost, reached_budget
from core.delivery.outbox import Outbox
from core.errors import ConflictError, InvalidInputError, NotFoundError, UnprocessableError
from core.ids import new_id
from core.rules import prompts
from core.rules.schedule import grace_s, parse_schedule
from core.rules.service import FAILURES_TO_PAUSE, RuleService
from core.runs.background_runner import BackgroundRunner
from core.runs.live_run import LiveRun
from core.runs.policy import SETTLE_LIMIT_S, Ending, RunLimits, SettleLimit, TimeCap
from core.runs.spending import RunSpending
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.store.rules import RuleRecord
from core.store.runs import RunCause, RunMode, RunOutcome, RunRecord
from core.tasks.language import language_of
from core.tasks.report import Report, validate_report
from core.tasks.tools import TaskReportArgs
from core.translations import text

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.agent.session import AgentSession

log = logging.getLogger(__name__)

RULE_PREFIX = "rule-"
PREVIOUS_REPORTS = 3
RUN_CAP_S = 15 * 60.0  # docs/runs.md#the-time-cap: a rule run's running time
OVER_TIME = text("zh", "rule_run.over_time")
RULE_LIMITS = RunLimits(
    DEFAULT_RETRY, TimeCap(RUN_CAP_S, OVER_TIME), SettleLimit(SETTLE_LIMIT_S, prompts.SETTLE_LIMIT_NOTE)
)
OVER_BUDGET = "这次运行超过预算 ${budget:.2f},已停下"
INTERRUPTED = "Errand restarted"
APPROVAL_TIMEOUT = "批准超时"
# Observe runs change nothing (docs/runs.md#observe-and-act): the writing tools are absent; the shell runs
# under `read-only` in the OS sandbox, and is absent too when there is none.
OBSERVE_TOOLS = frozenset({"bash", "read_file", "list_files", "grep", "web_fetch", "jobs", "task_report"})
SHELL_TOOLS = frozenset({"bash", "jobs"})
_PRESET_ORDER = (Preset.READ_ONLY, Preset.WORKSPACE_WRITE, Preset.FULL)


class RuleLane(Protocol):
    """What the rule runner needs from the background lane (TaskRunner): slots shared with task runs."""

    def serve_rule_runs(self, start: Callable[[str], Awaitable[None]]) -> None: ...

    def release(self, run_id: str) -> None: ...

    def poke(self) -> None: ...


@dataclass
class RuleWork:
    """What a working check knows of its rule, and what happened to it that only a rule run cares about."""

    rule: RuleRecord
    mode: RunMode
    refused: list[str] = field(default_factory=list)  # observe: approvals refused at once, in words
    approval_expired: bool = False  # act: nobody approved within the hour, so the run fails


RuleRun = LiveRun[RuleWork]


@dataclass(frozen=True, slots=True)
class ScheduledFirings:
    """What `RuleRunner.stage_scheduled` wrote, for its after-commit step and the scheduler's record."""

    fired: frozenset[str]  # rules that got a run
    overlapping: tuple[str, ...]  # rules whose run began between the scheduler's read and its write
    reminders: bool  # some reminder's words wait in the outbox
    checks: bool  # some check's run waits for a slot


class RuleReportArgs(TaskReportArgs):
    would: str | None = Field(
        default=None, description="Observe mode: what you would have done beyond telling the user."
    )


def rule_folder(workspace: Path, rule_id: str) -> Path:
    return workspace / "rules" / rule_id


def act_preset(bot_preset: str, granted: str) -> str:
    """The act cap (docs/permissions.md#who-gets-which-preset): the rule's grant when set, else min(bot
    preset, workspace-write)."""
    if granted:
        return granted
    bot = Preset.parse(bot_preset)
    return min(bot, Preset.WORKSPACE_WRITE, key=_PRESET_ORDER.index).value


@dataclass
class RuleRunPolicy:
    """What the lifecycle of a check means for its rule (a RunPolicy): its spend counts against the rule's
    budget per run, it never waits for inputs, and its end pushes what it said (act), counts the outcome
    towards pausing the rule and checks the rule's monthly budget."""

    db: Database
    bus: EventBus
    clock: Clock
    outbox: Outbox
    rules: RuleService
    lane: RuleLane
    limits: RunLimits

    saves_every_turn = False  # its run log shows a run once it has ended
    session_outlives_run = False  # `rule-<rule>-<n>` serves this run only

    def changed(self, run: RuleRun) -> None:
        self.bus.publish(RuleChanged(run.work.rule.id))  # its run log shows it running or settling

    def step_added(self, run: RuleRun) -> None:
        """A rule run's steps are shown once it has ended."""

    def past_budget(self, run: RuleRun) -> Ending | None:
        budget = run.work.rule.run_budget_usd
        if not reached_budget(run.cost.usd, budget):
            return None
        return Ending("budget", OVER_BUDGET.format(budget=budget))

    def count_spend(self, s: Session, run: RuleRun, cost: RunCost, before: RunRecord, now: float) -> None:
        """The rule's spend is summed from its runs (RuleService.check_month_budget)."""

    async def take_inputs(self, run: RuleRun) -> bool:
        return False  # nobody writes to a rule run

    async def review(self, run: RuleRun) -> bool:
        return False  # a rule run has no acceptance criteria

    def verdict(self, run: RuleRun) -> Ending | None:
        if run.work.approval_expired:
            return Ending("failed", APPROVAL_TIMEOUT)
        report = run.report
        if report is None:
            return None
        if report.state == "done":
            return Ending("done")
        return Ending("failed", report.message or report.summary)

    async def nudge(self, run: RuleRun) -> None:
        run_id = run.run_id
        await self.db.write(lambda s: run_rows.update_run(s, run_id, nudged=True))
        run.session.prompt(prompts.NUDGE, input_id=f"nudge:{run_id}")

    async def record_note(self, run: RuleRun, text: str) -> str | None:
        return None  # a rule run has no stored inputs: the note lives in its session only

    async def record_end(self, run_id: str, run: RuleRun | None, ending: Ending, *, notify: bool) -> None:
        if run is None:
            return  # ended already
        outcome, error = ending.outcome, ending.error
        report = run.report
        observe = run.work.mode == "observe"
        if observe and run.work.refused:
            refused = "; ".join(run.work.refused)
            if report is not None:
                report = dataclasses.replace(report, would="; ".join(filter(None, (report.would, refused))))
            elif outcome == "failed":
                error = f"{error} ({refused})" if error else refused
        message = report.message if report is not None and outcome == "done" else ""
        # The model's error in each language, when the run failed with it as it is (not a refusal added).
        words = dict(run.error_words) if error and error == run.error else {}
        await self.finish(
            run_id,
            run.work.rule,
            outcome,
            error=error,
            error_words=words,
            report=report,
            said="" if observe else message,
            would=message if observe else "",
        )

    async def finish(
        self,
        run_id: str,
        rule: RuleRecord,
        outcome: RunOutcome,
        *,
        error: str = "",
        error_words: Mapping[str, str] | None = None,
        report: Report | None = None,
        said: str = "",
        would: str = "",
    ) -> None:
        """Record the run's end, give its slot back, push what it said (act), count failures. `error_words`
        is `error` per language, so the push about it is worded in the person's."""
        now = self.clock.time()
        report_json = json.dumps(report.to_json(), ensure_ascii=False) if report is not None else None

        def end(s: Session) -> tuple[bool, bool]:
            """(ended now, the rule was already paused)"""
            run = run_rows.get_run(s, run_id)
            if run is None or run.state == "ended":
                return False, False
            run_rows.end_run(
                s, run_id, outcome=outcome, now=now, error=error, report=report_json, error_words=error_words
            )
            if would:
                run_rows.update_run(s, run_id, would=would)
            if said and rule.kind == "check":
                # Only an acting check pushes here (a reminder pushed its words before it ended), in the
                # run's own end, so a crash cannot fall between the two.
                self.outbox.stage(
                    s,
                    delivery_id=f"{run_id}:rule",
                    bot_id=rule.bot_id,
                    conversation_id=rule.conversation_id,
                    purpose="rule",
                    text=said,
                    rule_id=rule.id,
                    run_id=run_id,
                )
            current = rule_rows.get_rule(s, rule.id)
            return True, current is None or bool(current.paused_reason)

        ended, was_paused = await self.db.write(end)
        self.lane.release(run_id)
        if not ended:
            return
        if said and rule.kind == "check":
            await self.outbox.flush()
        view = None
        month = None
        with contextlib.suppress(NotFoundError):  # deleted meanwhile
            view = await self.rules.record_outcome(rule.id, outcome)
            month = await self.rules.check_month_budget(rule.id)
        if month is not None and month.push:
            # Paused at its monthly budget (docs/cost.md#rule-budgets): one pushed line per month and budget
            # level.
            await self.outbox.push(
                delivery_id=f"{run_id}:budget",
                bot_id=rule.bot_id,
                conversation_id=rule.conversation_id,
                purpose="failure",
                text=month_budget_text(rule.title, rule.instruction, month.budget_usd),
                rule_id=rule.id,
                run_id=run_id,
            )
        if view is not None and view.paused_reason == "failures" and not was_paused:
            # A rule paused after failures is a failure that needs the person
            # (docs/push-rules.md#what-is-pushed): pushed once.
            await self.outbox.push(
                delivery_id=f"{run_id}:failure",
                bot_id=rule.bot_id,
                conversation_id=rule.conversation_id,
                purpose="failure",
                text=paused_text(view.title, view.instruction, error, error_words or {}),
                rule_id=rule.id,
                run_id=run_id,
            )
        self.bus.publish(RuleChanged(rule.id))


class RuleRunner(BackgroundRunner[RuleWork]):
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        outbox: Outbox,
        rules: RuleService,
        lane: RuleLane,
        *,
        spending: RunSpending,
        limits: RunLimits = RULE_LIMITS,
    ) -> None:
        self._outbox = outbox
        self._lane = lane
        self._policy = RuleRunPolicy(db, bus, clock, outbox, rules, lane, limits)
        super().__init__(db, bus, clock, bots, self._policy, spending, limits.retry)
        self._queue_lock = asyncio.Lock()

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self, runtime: AgentRuntime) -> None:
        """Runs left live by a previous process end `interrupted` (the schedule goes on from now; nothing is
        caught up), then queued rule runs start taking slots."""
        now = self._clock.time()

        def interrupt(s: Session) -> list[str]:
            left = [r for r in run_rows.live_runs(s) if r.rule_id]
            for run in left:
                run_rows.end_run(s, run.id, outcome="interrupted", now=now, error=INTERRUPTED)
            return [r.rule_id for r in left]

        for rule_id in await self._db.write(interrupt):
            self._bus.publish(RuleChanged(rule_id))
        self._attach(runtime)
        self._lane.serve_rule_runs(self._start_run)
        self._lane.poke()

    async def stop(self) -> None:
        await self._driver.close()

    def is_running(self, rule_id: str) -> bool:
        return any(r.work.rule.id == rule_id for r in self._driver.runs())

    # ---- approvals (docs/attention.md#approvals): act runs ask a person, observe runs are refused at once

    def approval_context(self, session_id: str) -> tuple[str, RunMode, RuleRecord] | None:
        """(run id, mode, rule) of the live rule run whose session this is; None otherwise."""
        run = self._driver.of_session(session_id)
        return (run.run_id, run.work.mode, run.work.rule) if run is not None else None

    def refuse_observed_approval(self, session_id: str, action: str, detail: str) -> None:
        """An observing run asked for something that needs a person: refused at once, and recorded so the
        run's log says what it would have done ("would need approval: …")."""
        run = self._driver.of_session(session_id)
        if run is not None:
            run.work.refused.append(f"would need approval: {action} `{detail}`")

    def approval_expired(self, run_id: str) -> None:
        """Nobody approved an act run's request within its hour: the run ends `failed` 「批准超时」."""
        run = self._driver.live(run_id)
        if run is not None:
            run.work.approval_expired = True

    def wait_for_person(self, run_id: str, waiting: bool) -> None:
        """An act run's call waits on an approval (or stopped waiting): the time cap pauses meanwhile."""
        self._driver.hold(run_id, waiting)

    async def fire_event(self, rule_id: str) -> str:
        """An event matched the rule's trigger (EventTriggers): a run with cause `event`, in its mode."""
        rule = await self._rule(rule_id)
        if rule.mode == "off" or rule.paused_reason:
            raise ConflictError(f"Rule {rule_id!r} is {'paused' if rule.paused_reason else 'off'}.")
        return await self._queue(rule, "event")

    # ---- starting runs ------------------------------------------------------------------------------

    async def run_now(self, rule_id: str) -> str:
        """A person's "run now", in the rule's mode. Returns the run id; ConflictError while one is live."""
        rule = await self._rule(rule_id)
        if rule.mode == "off":
            raise UnprocessableError("mode", "the rule is off; turn it on (act or observe) to run it")
        return await self._queue(rule, "manual")

    # ---- the schedule's firings (docs/runs.md#the-scheduler): many at once, in the scheduler's transaction

    @contextlib.asynccontextmanager
    async def queueing(self) -> AsyncIterator[None]:
        """Hold this around the write that calls `stage_scheduled`: one check-and-insert at a time."""
        async with self._queue_lock:
            yield

    def stage_scheduled(self, s: Session, rule_ids: Sequence[str], now: float) -> ScheduledFirings:
        """The schedule fired these rules: inside the caller's transaction, which also stores their next
        runs, so a crash keeps all of it or none (the rules are due again at the next start: nothing fires
        twice, nothing is lost). A check gets a run with cause `schedule` that waits for a slot. A reminder's
        run is written as it ends, `done`, with its words queued in the outbox (its end owes them, as a run's
        end owes its push: docs/recovery.md). A rule gone meanwhile is left out; one whose run began
        meanwhile (a person's 立即运行) is returned as `overlapping`, for the caller to record skipped."""
        records = {r.id: r for r in rule_rows.rules_by_id(s, rule_ids)}
        live = run_rows.rules_with_live_runs(s, list(records))
        runs: list[run_rows.ScheduledRun] = []
        reminders: list[tuple[str, RuleRecord]] = []
        overlapping: list[str] = []
        checks = 0
        for rule_id in rule_ids:
            rule = records.get(rule_id)
            if rule is None:
                continue
            if rule_id in live:
                overlapping.append(rule_id)
                continue
            run_id = new_id("r")
            if rule.kind == "remind":
                report = Report(state="done", summary="reminder delivered", message=rule.instruction)
                runs.append(
                    run_rows.ScheduledRun(
                        run_id,
                        rule_id,
                        now,
                        "ended",
                        "done",
                        report=json.dumps(report.to_json(), ensure_ascii=False),
                        started_at=now,
                        ended_at=now,
                    )
                )
                reminders.append((run_id, rule))
            else:
                runs.append(run_rows.ScheduledRun(run_id, rule_id, now, "queued"))
                checks += 1
        run_rows.insert_scheduled_runs(s, runs, session_prefix=RULE_PREFIX)
        for run_id, rule in reminders:
            # Its words as written, to the rule's conversation; no model turn.
            self._outbox.stage(
                s,
                delivery_id=f"{run_id}:rule",
                bot_id=rule.bot_id,
                conversation_id=rule.conversation_id,
                purpose="rule",
                text=rule.instruction,
                rule_id=rule.id,
                run_id=run_id,
            )
            if rule.failures_in_row:
                # `done` resets the count (RuleService.record_outcome). A reminder spends nothing, so its
                # monthly budget is never reached by its run (`reached_budget` is false at 0).
                rule_rows.update_rule(s, rule.id, now=now, failures_in_row=0)
        return ScheduledFirings(
            fired=frozenset(r.rule_id for r in runs),
            overlapping=tuple(overlapping),
            reminders=bool(reminders),
            checks=checks > 0,
        )

    async def scheduled(self, firings: ScheduledFirings) -> None:
        """After the commit of `stage_scheduled`: the reminders' words go out (one flush for all of them:
        the outbox merges what is due together in a conversation, docs/push-rules.md#coalescing-and-digests),
        and queued checks look for a slot."""
        if firings.checks:
            self._lane.poke()
        if firings.reminders:
            await self._outbox.flush()

    async def _queue(self, rule: RuleRecord, cause: RunCause) -> str:
        run_id = new_id("r")
        now = self._clock.time()
        mode: RunMode = "observe" if rule.mode == "observe" and rule.kind == "check" else "act"

        def insert(s: Session) -> RunRecord:
            live = run_rows.live_run_of_rule(s, rule.id)
            if live is not None:
                raise ConflictError(f"Rule {rule.id!r} is already running (run {live.id}).")
            n = run_rows.count_runs_of_rule(s, rule.id) + 1
            return run_rows.insert_run(
                s,
                id=run_id,
                bot_id=rule.bot_id,
                session_id=f"{RULE_PREFIX}{rule.id}-{n}",
                cause=cause,
                now=now,
                rule_id=rule.id,
                rule_version=rule.version,
                mode=mode,
            )

        async with self._queue_lock:  # one check-and-insert at a time: a rule never runs twice at once
            run = await self._db.write(insert)
        self._bus.publish(RuleChanged(rule.id))
        if rule.kind == "remind":
            await self._remind(run, rule)
        else:
            self._lane.poke()
        return run_id

    async def _remind(self, run: RunRecord, rule: RuleRecord) -> None:
        """A fixed reminder: its words, as written, to the rule's conversation. No model turn."""
        now = self._clock.time()
        await self._db.write(lambda s: run_rows.set_run_state(s, run.id, "running", now=now))
        try:
            await self._outbox.push(
                delivery_id=f"{run.id}:rule",
                bot_id=rule.bot_id,
                conversation_id=rule.conversation_id,
                purpose="rule",
                text=rule.instruction,
                rule_id=rule.id,
                run_id=run.id,
            )
        except Exception as exc:
            log.exception("reminder %s could not be queued", rule.id)
            await self._policy.finish(run.id, rule, "failed", error=str(exc) or "delivery failed")
            return
        report = Report(state="done", summary="reminder delivered", message=rule.instruction)
        await self._policy.finish(run.id, rule, "done", report=report, said=rule.instruction)

    async def _start_run(self, run_id: str) -> None:
        """Called by the lane once the run holds a slot."""
        run = await self._db.read(lambda s: run_rows.get_run(s, run_id))
        if run is None or run.state == "ended":
            self._lane.release(run_id)
            return
        rule = await self._db.read(lambda s: rule_rows.get_rule(s, run.rule_id))
        if rule is None or rule.mode == "off":
            # Deleted or turned off while it waited: it does not run.
            await self._db.write(
                lambda s: run_rows.end_run(s, run_id, outcome="stopped", now=self._clock.time())
            )
            self._lane.release(run_id)
            if rule is not None:
                self._bus.publish(RuleChanged(rule.id))
            return
        skip = ""
        if run.cause == "schedule" and self._waited_past_grace(run, rule):
            # docs/runs.md#missed-runs-and-grace: a scheduled firing that waited beyond its grace is skipped,
            # not run late
            skip = "late"
        elif self._reserve_low(rule.bot_id):
            # docs/cost.md#the-chat-reserve: what is left of the bot's balance is kept for chat
            skip = "reserve"
        if skip:
            now = self._clock.time()
            await self._db.write(
                lambda s: run_rows.end_run(s, run_id, outcome="skipped", now=now, error=skip)
            )
            self._lane.release(run_id)
            self._bus.publish(RuleChanged(rule.id))
            return
        try:
            session = await self._open_session(run, rule)
        except Exception as exc:
            log.exception("rule run %s could not open its session", run_id)
            await self._policy.finish(run_id, rule, "failed", error=f"the run could not start: {exc}")
            return
        await self._driver.begin(run_id, rule.bot_id, session, RuleWork(rule, run.mode))
        session.prompt(prompts.START, input_id=f"start:{run_id}")

    def _waited_past_grace(self, run: RunRecord, rule: RuleRecord) -> bool:
        try:
            schedule = parse_schedule(rule.schedule, default_tz=rule.tz)
        except InvalidInputError:
            return False
        return self._clock.time() - run.queued_at > grace_s(schedule)

    async def _open_session(self, run: RunRecord, rule: RuleRecord) -> AgentSession:
        assert self._runtime is not None
        bot = await self._bots.get(rule.bot_id)
        folder = rule_folder(Path(bot.workspace), rule.id)
        observe = run.mode == "observe"
        preset = "read-only" if observe else act_preset(bot.preset, rule.granted_preset)
        permission: Permission = await self._bots.permission(rule.bot_id, preset=preset)
        previous = await self._previous(rule, run.id)
        section = prompts.RULE_SECTION.format(
            title=rule.title,
            instruction=rule.instruction,
            folder=folder,
            mode_note=prompts.OBSERVE_NOTE if observe else prompts.ACT_NOTE,
            previous=prompts.previous_reports(previous),
        )
        spec = SessionSpec(
            session_id=run.session_id,
            kind="rule",
            bot_id=rule.bot_id,
            cwd=folder,
            model=await self._bots.model_config(rule.bot_id),
            permission=permission,
            prompt_sections=(section,),
            allowed_tools=OBSERVE_TOOLS if observe else None,
            extra_tools=(self._report_tool(),),
            observing=observe,
            retry=self._retry,
        )
        if observe and not self._runtime.shell_sandbox(spec).confines:
            # Without an OS sandbox a shell could change files: an observing run gets no shell at all.
            spec = dataclasses.replace(spec, allowed_tools=OBSERVE_TOOLS - SHELL_TOOLS)
        return await self._runtime.open_session(spec)

    async def _previous(self, rule: RuleRecord, run_id: str) -> list[tuple[str, str, str]]:
        """The last Reports of this rule (newest first) for its prompt: when, outcome, what it said."""
        runs = await self._db.read(lambda s: run_rows.runs_of_rule(s, rule.id, limit=PREVIOUS_REPORTS + 5))
        found: list[tuple[str, str, str]] = []
        for run in runs:
            if run.id == run_id or run.state != "ended" or run.outcome not in ("done", "failed"):
                continue
            report = _report_of(run)
            text = (report.message or report.summary) if report else run.error
            if run.mode == "observe" and report is not None and report.message:
                text = f"(observed, would have said) {report.message}"
            when = datetime.fromtimestamp(run.started_at or run.queued_at, ZoneInfo(rule.tz))
            found.append((when.strftime("%Y-%m-%d %H:%M"), run.outcome, text))
            if len(found) == PREVIOUS_REPORTS:
                break
        return found

    # ---- the report tool ----------------------------------------------------------------------------

    def _report_tool(self) -> ToolSpec:
        async def task_report(ctx: ToolContext, args: RuleReportArgs) -> str:
            return await self.report_from_rule(ctx.session_id, args.model_dump(exclude_none=True))

        return ToolSpec(
            "task_report",
            "Report this rule run: done (with `message` = what to tell the user, or none to stay quiet) or "
            "failed (what went wrong). In observe mode, also `would` = what you would have done.",
            RuleReportArgs,
            task_report,
            frozenset[SessionKind]({"rule"}),
        )

    async def report_from_rule(self, session_id: str, args: dict[str, Any]) -> str:
        try:
            report = validate_report(args)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        run = self._driver.of_session(session_id)
        if run is None:
            raise ToolError("This rule run is not running any more; nothing was recorded.")
        if report.state == "needs_you":
            raise ToolError(
                "A rule run never asks the user. Decide, then report `done` (say what you chose in "
                "`message`) or `failed`."
            )
        if report.state == "progress":
            return "Noted (not shown to the user). Carry on, then report done or failed."
        run.report = report
        if run.work.mode == "observe":
            return "Recorded. Nobody is told in observe mode; end your turn now."
        return "Recorded. The user gets your message when you finish; end your turn now."

    async def _rule(self, rule_id: str) -> RuleRecord:
        record = await self._db.read(lambda s: rule_rows.get_rule(s, rule_id))
        if record is None:
            raise NotFoundError("rule", rule_id)
        return record


def paused_text(
    title: str, instruction: str, reason: str, reason_words: Mapping[str, str] | None = None
) -> str:
    """The one pushed line for a rule paused after failures, in the language of the user's words (the
    reason too, when its words in that language are known)."""
    lang = language_of(instruction)
    why = (reason_words or {}).get(lang) or reason or text(lang, "rule_push.no_reason")
    return text(lang, "rule_push.paused", title=title, count=FAILURES_TO_PAUSE, reason=why)


def month_budget_text(title: str, instruction: str, budget_usd: float) -> str:
    """The one pushed line for a rule paused at its monthly budget, in the language of the user's words."""
    return text(language_of(instruction), "rule_push.month_budget", title=title, budget=budget_usd)


def _report_of(run: RunRecord) -> Report | None:
    if not run.report:
        return None
    try:
        data = json.loads(run.report)
        return Report.from_json(data) if isinstance(data, dict) else None
    except ValueError:
        return None
