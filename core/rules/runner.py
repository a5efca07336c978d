"""Runs of rules (P3 §1, §5, §7): one firing of a rule, from the schedule or a person's "run now".

- A reminder (`kind == "remind"`) has no model turn: its words go through the outbox to the rule's
  conversation, and the run ends `done`. It always acts.
- A check takes a background slot on the same lane as task runs (TaskRunner.serve_rule_runs), so the
  per-bot and overall caps hold for both. It gets a fresh session `rule-<rule>-<n>` in the rule's folder,
  with the instruction verbatim and the last Reports of the rule in its prompt, and reports with
  `task_report`. In `observe` it runs read-only without the writing tools, its approvals are refused and it
  tells nobody anything: what it would have said is recorded on the run. In `act` a non-empty message is
  pushed to the rule's conversation.
A turn that ends without a Report gets one nudge; then the run fails. Three failed runs in a row pause the
rule (RuleService.record_outcome). Writes to runs of rules go through here; to rules through RuleService.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from pydantic import Field
from sqlalchemy.orm import Session

from core.activity import ActivityLog
from core.agent import events as ev
from core.agent.model_config import DEFAULT_RETRY, RetryPolicy
from core.agent.sandbox import Permission, Preset
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import SessionKind, ToolContext, ToolError, ToolSpec
from core.bots.service import BotService
from core.bus import EventBus
from core.clock import Clock
from core.cost.meter import CostMeter, RunCost, reached_budget
from core.delivery.outbox import Outbox
from core.errors import ConflictError, InvalidInputError, NotFoundError, UnprocessableError
from core.events import RuleChanged
from core.ids import new_id
from core.rules import prompts
from core.rules.schedule import grace_s, parse_schedule
from core.rules.service import FAILURES_TO_PAUSE, RuleService
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.store.rules import RuleRecord
from core.store.runs import RunCause, RunMode, RunOutcome, RunRecord
from core.tasks.language import language_of
from core.tasks.report import Report, validate_report
from core.tasks.running_time import RunningTime, cancel_timers, halt, reach_cap
from core.tasks.tools import TaskReportArgs

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.agent.session import AgentSession

log = logging.getLogger(__name__)

RULE_PREFIX = "rule-"
PREVIOUS_REPORTS = 3
SETTLE_LIMIT_S = 30 * 60.0
RUN_CAP_S = 15 * 60.0  # P3 §8: a rule run's running time
NO_RESULT = "没有给出结果"
OVER_TIME = "运行超过 15 分钟,已停下"
OVER_BUDGET = "这次运行超过预算 ${budget:.2f},已停下"
INTERRUPTED = "Errand restarted"
APPROVAL_TIMEOUT = "批准超时"
# Observe runs change nothing (P3 §5): the writing tools are absent; the shell runs under `read-only` in
# the OS sandbox, and is absent too when there is none.
OBSERVE_TOOLS = frozenset({"bash", "read_file", "list_files", "grep", "web_fetch", "jobs", "task_report"})
SHELL_TOOLS = frozenset({"bash", "jobs"})
_PRESET_ORDER = (Preset.READ_ONLY, Preset.WORKSPACE_WRITE, Preset.FULL)


class RuleLane(Protocol):
    """What the rule runner needs from the background lane (TaskRunner): slots shared with task runs."""

    def serve_rule_runs(self, start: Callable[[str], Awaitable[None]]) -> None: ...

    def release(self, run_id: str) -> None: ...

    def poke(self) -> None: ...


@dataclass
class _Active:
    run_id: str
    rule: RuleRecord
    mode: RunMode
    session: AgentSession
    activity: ActivityLog = field(default_factory=ActivityLog)
    report: Report | None = None
    error: str = ""
    nudged: bool = False
    checking: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    settle_timer: asyncio.Task[None] | None = None
    refused: list[str] = field(default_factory=list)  # observe: approvals refused at once, in words
    approval_expired: bool = False  # act: nobody approved within the hour, so the run fails
    base_url: str = ""
    cost: RunCost = field(default_factory=RunCost)
    stopping: bool = False  # stopped at a limit: its cancelled turn is not nudged or settled
    running: RunningTime = field(default_factory=lambda: RunningTime(0.0))
    cap_timer: asyncio.Task[None] | None = None


class RuleReportArgs(TaskReportArgs):
    would: str | None = Field(
        default=None, description="Observe mode: what you would have done beyond telling the user."
    )


def rule_folder(workspace: Path, rule_id: str) -> Path:
    return workspace / "rules" / rule_id


def act_preset(bot_preset: str, granted: str) -> str:
    """The act cap (P3 §7): the rule's grant when set, else min(bot preset, workspace-write)."""
    if granted:
        return granted
    bot = Preset.parse(bot_preset)
    return min(bot, Preset.WORKSPACE_WRITE, key=_PRESET_ORDER.index).value


class RuleRunner:
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
        retry: RetryPolicy = DEFAULT_RETRY,
        settle_limit_s: float = SETTLE_LIMIT_S,
        meter: CostMeter | None = None,
        run_cap_s: float = RUN_CAP_S,
        on_cost: Callable[[str, float], None] = lambda _bot, _usd: None,
        reserve_low: Callable[[str], bool] = lambda _bot: False,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._outbox = outbox
        self._rules = rules
        self._lane = lane
        self._retry = retry
        self._settle_limit_s = settle_limit_s
        self._meter = meter or CostMeter(clock)
        self._run_cap_s = run_cap_s
        self._on_cost = on_cost
        self._reserve_low = reserve_low
        self._runtime: AgentRuntime | None = None
        self._active: dict[str, _Active] = {}  # by run id
        self._by_session: dict[str, str] = {}  # session id -> run id
        self._background: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._queue_lock = asyncio.Lock()

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self, runtime: AgentRuntime) -> None:
        """Runs left live by a previous process end `interrupted` (the schedule goes on from now; nothing is
        caught up), then queued rule runs start taking slots."""
        self._runtime = runtime
        now = self._clock.time()

        def interrupt(s: Session) -> list[str]:
            left = [r for r in run_rows.live_runs(s) if r.rule_id]
            for run in left:
                run_rows.end_run(s, run.id, outcome="interrupted", now=now, error=INTERRUPTED)
            return [r.rule_id for r in left]

        for rule_id in await self._db.write(interrupt):
            self._bus.publish(RuleChanged(rule_id))
        self._unsubscribe = runtime.subscribe(self._on_event)
        self._lane.serve_rule_runs(self._start_run)
        self._lane.poke()

    async def stop(self) -> None:
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None
        for active in self._active.values():
            cancel_timers(active.settle_timer, active.cap_timer)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    def is_running(self, rule_id: str) -> bool:
        return any(a.rule.id == rule_id for a in self._active.values())

    # ---- approvals (P3 §7): act runs ask a person, observe runs are refused at once ----------------------

    def approval_context(self, session_id: str) -> tuple[str, RunMode, RuleRecord] | None:
        """(run id, mode, rule) of the live rule run whose session this is; None otherwise."""
        run_id = self._by_session.get(session_id)
        active = self._active.get(run_id) if run_id else None
        return (active.run_id, active.mode, active.rule) if active is not None else None

    def refuse_observed_approval(self, session_id: str, action: str, detail: str) -> None:
        """An observing run asked for something that needs a person: refused at once, and recorded so the
        run's log says what it would have done ("would need approval: …")."""
        run_id = self._by_session.get(session_id)
        active = self._active.get(run_id) if run_id else None
        if active is not None:
            active.refused.append(f"would need approval: {action} `{detail}`")

    def approval_expired(self, run_id: str) -> None:
        """Nobody approved an act run's request within its hour: the run ends `failed` 「批准超时」."""
        active = self._active.get(run_id)
        if active is not None:
            active.approval_expired = True

    async def fire_event(self, rule_id: str) -> str:
        """An event matched the rule's trigger (RuleEvents): a run with cause `event`, in the rule's mode."""
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

    async def fire(self, rule_id: str) -> str:
        """The schedule fired: a run with cause `schedule` (it waits for a slot)."""
        return await self._queue(await self._rule(rule_id), "schedule")

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
                run_id=run.id,
            )
        except Exception as exc:
            log.exception("reminder %s could not be queued", rule.id)
            await self._finish(run.id, rule, "failed", error=str(exc) or "delivery failed")
            return
        report = Report(state="done", summary="reminder delivered", message=rule.instruction)
        await self._finish(run.id, rule, "done", report=report, said=rule.instruction)

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
            skip = "late"  # P3 §4: a scheduled firing that waited beyond its grace is skipped, not run late
        elif self._reserve_low(rule.bot_id):
            skip = "reserve"  # P3 §8: what is left of the bot's balance is kept for chat
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
            await self._finish(run_id, rule, "failed", error=f"the run could not start: {exc}")
            return
        now = self._clock.time()
        active = _Active(
            run_id,
            rule,
            run.mode,
            session,
            base_url=session.spec.model.base_url,
            running=RunningTime(self._clock.monotonic()),
        )
        self._active[run_id] = active
        self._by_session[session.session_id] = run_id
        await self._db.write(lambda s: run_rows.set_run_state(s, run_id, "running", now=now))
        active.cap_timer = asyncio.get_running_loop().create_task(self._time_cap(run_id))
        self._bus.publish(RuleChanged(rule.id))
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
        run_id = self._by_session.get(session_id)
        active = self._active.get(run_id) if run_id else None
        if active is None:
            raise ToolError("This rule run is not running any more; nothing was recorded.")
        if report.state == "needs_you":
            raise ToolError(
                "A rule run never asks the user. Decide, then report `done` (say what you chose in "
                "`message`) or `failed`."
            )
        if report.state == "progress":
            return "Noted (not shown to the user). Carry on, then report done or failed."
        active.report = report
        if active.mode == "observe":
            return "Recorded. Nobody is told in observe mode; end your turn now."
        return "Recorded. The user gets your message when you finish; end your turn now."

    # ---- watching sessions --------------------------------------------------------------------------

    def _on_event(self, event: ev.AgentEvent) -> None:
        run_id = self._by_session.get(event.session_id)
        active = self._active.get(run_id) if run_id else None
        if active is None:
            return
        if isinstance(event, ev.AssistantMessage):
            active.tokens_in += event.usage.input_tokens
            active.tokens_out += event.usage.output_tokens
            self._count_cost(active, event)
        active.activity.feed(event)
        if isinstance(event, ev.TurnEnded):
            if event.outcome == "error":
                active.error = event.error
            self._spawn(self._check_settled(active.run_id))
        elif (isinstance(event, ev.StatusChanged) and event.status == "idle") or isinstance(
            event, ev.JobEnded
        ):
            self._spawn(self._check_settled(active.run_id))

    def _count_cost(self, active: _Active, event: ev.AssistantMessage) -> None:
        cost = self._meter.price(
            event.model, active.base_url, event.usage, configured=active.session.spec.model.model
        )
        active.cost.add(cost)
        if cost is not None and cost.currency == "USD":
            self._on_cost(active.rule.bot_id, float(cost.amount))
        budget = active.rule.run_budget_usd
        if not active.stopping and reached_budget(active.cost.usd, budget):
            self._spawn(self._stop_at(active.run_id, "budget", OVER_BUDGET.format(budget=budget)))

    async def _stop_at(self, run_id: str, outcome: RunOutcome, error: str) -> None:
        """Stop a run at its budget or its time cap (P3 §8): cancel the turn, kill its jobs, end it."""
        active = self._active.get(run_id)
        if active is None or active.stopping:
            return
        active.stopping = True
        await halt(active.session, self._runtime)
        await self._end(active, outcome, error=error)

    async def _time_cap(self, run_id: str) -> None:
        """Fail the run once it has run for the cap (core.tasks.running_time says what counts)."""
        current = functools.partial(self._active.get, run_id)
        if await reach_cap(self._clock, self._run_cap_s, current, self._jobs_running):
            await self._stop_at(run_id, "failed", OVER_TIME)

    def _jobs_running(self, session_id: str) -> bool:
        return self._runtime is not None and bool(self._runtime.jobs.running(session_id))

    def wait_for_person(self, run_id: str, waiting: bool) -> None:
        """An act run's call waits on an approval (or stopped waiting): the time cap pauses meanwhile."""
        active = self._active.get(run_id)
        if active is not None:
            active.running.hold(self._clock.monotonic(), waiting)

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("rule runner work failed")

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _check_settled(self, run_id: str) -> None:
        active = self._active.get(run_id)
        if active is None or active.checking or active.stopping or active.session.status != "idle":
            return
        assert self._runtime is not None
        active.checking = True
        try:
            if self._jobs_running(active.session.session_id):
                now = self._clock.time()
                await self._db.write(lambda s: run_rows.set_run_state(s, run_id, "settling", now=now))
                if active.settle_timer is None:
                    active.settle_timer = asyncio.get_running_loop().create_task(self._settle_limit(run_id))
                self._bus.publish(RuleChanged(active.rule.id))  # its run log shows it settling
                return
            report = active.report
            if active.approval_expired:
                await self._end(active, "failed", error=APPROVAL_TIMEOUT)
            elif report is not None:
                outcome: RunOutcome = "done" if report.state == "done" else "failed"
                error = (report.message or report.summary) if outcome == "failed" else ""
                await self._end(active, outcome, error=error)
            elif active.error:
                await self._end(active, "failed", error=active.error)
            elif not active.nudged:
                active.nudged = True
                await self._db.write(lambda s: run_rows.update_run(s, run_id, nudged=True))
                active.session.prompt(prompts.NUDGE, input_id=f"nudge:{run_id}")
            else:
                await self._end(active, "failed", error=NO_RESULT)
        finally:
            active.checking = False

    async def _settle_limit(self, run_id: str) -> None:
        await self._clock.sleep(self._settle_limit_s)
        active = self._active.get(run_id)
        if active is None or self._runtime is None:
            return
        session_id = active.session.session_id
        commands = [job.command for job in self._runtime.jobs.running(session_id)]
        active.settle_timer = None
        active.session.steer(prompts.SETTLE_LIMIT_NOTE.format(jobs=", ".join(commands) or "none"))
        await self._runtime.jobs.kill_session(session_id)

    # ---- ending -------------------------------------------------------------------------------------

    async def _end(self, active: _Active, outcome: RunOutcome, *, error: str = "") -> None:
        if self._active.pop(active.run_id, None) is None:
            return
        self._by_session.pop(active.session.session_id, None)
        cancel_timers(active.settle_timer, active.cap_timer)
        steps = active.activity.to_json()
        tokens = (active.tokens_in, active.tokens_out)
        cost = active.cost
        await self._db.write(
            lambda s: run_rows.update_run(
                s,
                active.run_id,
                activity=steps,
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                cost_usd=cost.usd,
                cost_other=cost.other,
                unpriced_calls=cost.unpriced_calls,
            )
        )
        if self._runtime is not None:
            await self._runtime.close_session(active.session.session_id)
        report = active.report
        observe = active.mode == "observe"
        if observe and active.refused:
            refused = "; ".join(active.refused)
            if report is not None:
                report = dataclasses.replace(report, would="; ".join(filter(None, (report.would, refused))))
            elif outcome == "failed":
                error = f"{error} ({refused})" if error else refused
        message = report.message if report is not None and outcome == "done" else ""
        await self._finish(
            active.run_id,
            active.rule,
            outcome,
            error=error,
            report=report,
            said="" if observe else message,
            would=message if observe else "",
        )

    async def _finish(
        self,
        run_id: str,
        rule: RuleRecord,
        outcome: RunOutcome,
        *,
        error: str = "",
        report: Report | None = None,
        said: str = "",
        would: str = "",
    ) -> None:
        """Record the run's end, give its slot back, push what it said (act), count failures."""
        now = self._clock.time()
        report_json = json.dumps(report.to_json(), ensure_ascii=False) if report is not None else None

        def end(s: Session) -> tuple[bool, bool]:
            """(ended now, the rule was already paused)"""
            run = run_rows.get_run(s, run_id)
            if run is None or run.state == "ended":
                return False, False
            run_rows.end_run(s, run_id, outcome=outcome, now=now, error=error, report=report_json)
            if would:
                run_rows.update_run(s, run_id, would=would)
            if said and rule.kind == "check":
                # Only an acting check pushes here (a reminder pushed its words before it ended), in the
                # run's own end, so a crash cannot fall between the two.
                self._outbox.stage(
                    s,
                    delivery_id=f"{run_id}:rule",
                    bot_id=rule.bot_id,
                    conversation_id=rule.conversation_id,
                    purpose="rule",
                    text=said,
                    run_id=run_id,
                )
            current = rule_rows.get_rule(s, rule.id)
            return True, current is None or bool(current.paused_reason)

        ended, was_paused = await self._db.write(end)
        self._lane.release(run_id)
        if not ended:
            return
        if said and rule.kind == "check":
            await self._outbox.flush()
        view = None
        month = None
        with contextlib.suppress(NotFoundError):  # deleted meanwhile
            view = await self._rules.record_outcome(rule.id, outcome)
            month = await self._rules.check_month_budget(rule.id)
        if month is not None and month.push:
            # Paused at its monthly budget (P3 §8): one pushed line per month and budget level.
            await self._outbox.push(
                delivery_id=f"{run_id}:budget",
                bot_id=rule.bot_id,
                conversation_id=rule.conversation_id,
                purpose="failure",
                text=month_budget_text(rule.title, rule.instruction, month.budget_usd),
                run_id=run_id,
            )
        if view is not None and view.paused_reason == "failures" and not was_paused:
            # A rule paused after failures is a failure that needs the person (P3 §6): pushed once.
            await self._outbox.push(
                delivery_id=f"{run_id}:failure",
                bot_id=rule.bot_id,
                conversation_id=rule.conversation_id,
                purpose="failure",
                text=paused_text(view.title, view.instruction, error),
                run_id=run_id,
            )
        self._bus.publish(RuleChanged(rule.id))

    async def _rule(self, rule_id: str) -> RuleRecord:
        record = await self._db.read(lambda s: rule_rows.get_rule(s, rule_id))
        if record is None:
            raise NotFoundError("rule", rule_id)
        return record


def paused_text(title: str, instruction: str, reason: str) -> str:
    """The one pushed line for a rule paused after failures, in the language of the user's words."""
    if language_of(instruction) == "zh":
        return f"规则「{title}」连续失败 {FAILURES_TO_PAUSE} 次,已暂停:{reason or '没有给出原因'}"
    why = reason or "no reason given"
    return f"Rule “{title}” failed {FAILURES_TO_PAUSE} times in a row and is paused: {why}"


def month_budget_text(title: str, instruction: str, budget_usd: float) -> str:
    """The one pushed line for a rule paused at its monthly budget, in the language of the user's words."""
    if language_of(instruction) == "zh":
        return f"规则「{title}」本月预算约 ${budget_usd:.2f} 已用完,已暂停,下月 1 日恢复"
    return (
        f"Rule “{title}” used its monthly budget of about ${budget_usd:.2f} and is paused until the 1st; "
        "raise it in Needs you"
    )


def _report_of(run: RunRecord) -> Report | None:
    if not run.report:
        return None
    try:
        data = json.loads(run.report)
        return Report.from_json(data) if isinstance(data, dict) else None
    except ValueError:
        return None
