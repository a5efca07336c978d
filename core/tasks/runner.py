"""Runs of background tasks on the background lane (P3 §2-§3).

A run goes `queued -> running <-> settling -> ended`. It holds a slot while running or settling. It takes the
task's untaken inputs, watches the task session through the runtime's event stream, and ends when the
session is quiet (no turn, no jobs) with the outcome its Report gives. A turn that ends without a Report
gets one nudge; then the run fails. Writes to tasks, runs and run_inputs go through here or TaskService.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from core.activity import ActivityLog
from core.agent import events as ev
from core.agent.model_config import RetryPolicy
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import ToolSpec
from core.bots.service import BotService
from core.bus import EventBus
from core.clock import Clock
from core.cost.meter import CostMeter, RunCost, reached_budget
from core.events import RunStepAdded, TaskChanged
from core.ids import new_id
from core.store import bots as bot_rows
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.amounts import add_amounts
from core.store.database import Database
from core.store.runs import RunOutcome, RunRecord
from core.store.tasks import TaskRecord
from core.tasks.prompts import NUDGE, SETTLE_LIMIT_NOTE, TASK_SECTION
from core.tasks.report import Report
from core.tasks.running_time import RunningTime, cancel_timers, halt, reach_cap
from core.tasks.slots import Priority, SlotError, Slots, pick, priority_of
from core.tasks.slots import QueuedRun as SlotRequest
from core.tasks.withdraw import withdraw_open_questions

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.agent.session import AgentSession

log = logging.getLogger(__name__)

TASK_RETRY = RetryPolicy(delays_s=(15.0, 30.0, 60.0))  # P3 §11
SETTLE_LIMIT_S = 30 * 60.0
RUN_CAP_S = 4 * 3600.0  # P3 §8: running time per task run, time waiting on a person excluded
NO_RESULT = "没有给出结果"
OVER_TIME = "运行超过 4 小时,已停下"
RESERVE_PAUSE = "机器人余额留给聊天,暂停"
RESUME_NOTE = (
    "[Paused while the bot's remaining balance was kept for chat; it is available again] "
    "Continue where you left off."
)
STOPPED_REFUSAL = "This task was stopped by the user. Do nothing more."
TASK_PREFIX = "task-"

Finished = Callable[[RunRecord, TaskRecord, Report | None], Awaitable[None]]
# Inside the transaction that ends the run: queue what the run's end owes its conversation (result,
# failure, budget question), so the end and what it owes commit together.
OwedPushes = Callable[[Session, RunRecord, TaskRecord, Report | None], None]
RuleStarter = Callable[[str], Awaitable[None]]  # run id; the run holds its slot when called


@dataclass
class _Active:
    run_id: str
    task_id: str
    bot_id: str
    session: AgentSession
    activity: ActivityLog = field(default_factory=ActivityLog)
    report: Report | None = None
    error: str = ""
    nudged: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    settle_timer: asyncio.Task[None] | None = None
    checking: bool = False
    # Held while the run decides whether it is finished, and while inputs are handed to it: an input
    # arriving as the run ends either goes in before the decision or finds the run gone.
    deciding: asyncio.Lock = field(default_factory=asyncio.Lock)
    stopping: bool = False  # a person stopped it: its cancelled turn must not be nudged or settled
    # Cost (P3 §8): what the task had spent before this run, its budget, and this run's total so far.
    base_url: str = ""
    spent_before: float = 0.0
    budget_usd: float = 0.0
    cost: RunCost = field(default_factory=RunCost)
    over_budget: bool = False
    running: RunningTime = field(default_factory=lambda: RunningTime(0.0))
    cap_timer: asyncio.Task[None] | None = None


def _minus(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: v - b.get(k, 0.0) for k, v in a.items()}


def task_session_id(task_id: str) -> str:
    return f"{TASK_PREFIX}{task_id}"


class TaskRunner:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        slots: Slots,
        *,
        tools: Callable[[], list[ToolSpec]],
        on_finished: Finished,
        owed_pushes: OwedPushes,
        retry: RetryPolicy = TASK_RETRY,
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
        self._slots = slots
        self._tools = tools
        self._on_finished = on_finished
        self._owed_pushes = owed_pushes
        self._retry = retry
        self._settle_limit_s = settle_limit_s
        self._meter = meter or CostMeter(clock)
        self._run_cap_s = run_cap_s
        self._on_cost = on_cost
        self._reserve_low = reserve_low
        self._runtime: AgentRuntime | None = None
        self._active: dict[str, _Active] = {}  # by run id
        self._by_session: dict[str, str] = {}  # session id -> run id
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._rule_starter: RuleStarter | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self, runtime: AgentRuntime) -> None:
        self._runtime = runtime
        self._unsubscribe = runtime.subscribe(self._on_event)
        self._loop = asyncio.get_running_loop().create_task(self._schedule_loop(), name="task-scheduler")
        self.poke()

    async def stop(self) -> None:
        """Stop scheduling. Running sessions are closed by the runtime; their runs are recovered at start."""
        if self._unsubscribe:
            self._unsubscribe()
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        for active in self._active.values():
            cancel_timers(active.settle_timer, active.cap_timer)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    def poke(self) -> None:
        """Something changed (a run was queued or a slot freed): look for runs to start."""
        self._wake.set()

    def serve_rule_runs(self, start: RuleStarter) -> None:
        """Queued rule runs take background slots here too, in one order with task runs (P3 §3), so the
        caps hold for both: `start(run_id)` is awaited once the run holds its slot. The rule runner gives
        the slot back with `release`."""
        self._rule_starter = start

    def release(self, run_id: str) -> None:
        """A rule run ended: its slot is free for the next queued run."""
        self._slots.release(run_id)
        self.poke()

    def set_budget(self, task_id: str, budget_usd: float) -> None:
        """A person changed the task's budget: a working run counts against the new one from now on."""
        for active in self._active.values():
            if active.task_id == task_id:
                active.budget_usd = budget_usd

    def active_run(self, task_id: str) -> str | None:
        return next((a.run_id for a in self._active.values() if a.task_id == task_id), None)

    def live_steps(self, run_id: str) -> list[dict[str, object]] | None:
        """The steps of a run that is working now, as far as they go (None when it isn't active): the
        stored activity is written only when a turn ends."""
        active = self._active.get(run_id)
        return active.activity.to_json() if active else None

    def record_report(self, session_id: str, report: Report) -> bool:
        """Keep the latest Report of the run this session works for; False when no run is active."""
        run_id = self._by_session.get(session_id)
        active = self._active.get(run_id) if run_id else None
        if active is None or active.stopping:
            return False
        # Progress and a question with a default are not where the run ends: it goes on.
        asks_and_goes_on = (
            report.state == "needs_you"
            and report.question is not None
            and report.question.default is not None
        )
        if report.state != "progress" and not asks_and_goes_on:
            active.report = report
        return True

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("task runner work failed")

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- scheduling ---------------------------------------------------------------------------------

    async def _schedule_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._start_ready_runs()
            except Exception:
                log.exception("scheduling task runs failed")

    async def _start_ready_runs(self) -> None:
        live, bots = await self._db.read(lambda s: (run_rows.live_runs(s), bot_rows.list_bots(s)))
        # Read at every look, so a changed setting counts from the next poke on (BotService pokes).
        self._slots.set_per_bot({b.id: b.task_slots for b in bots})
        paused = {b.id for b in bots if b.paused}
        queued = [
            SlotRequest(r.id, r.bot_id, r.cause, r.queued_at)
            for r in live
            # A paused bot starts no new run (P3 §6 "Manual pause"); its queued runs wait for the unpause.
            if r.state == "queued"
            and (r.task_id or (r.rule_id and self._rule_starter is not None))
            and r.id not in self._active
            and r.bot_id not in paused
            # Below the reserve, what is left of the bot's balance is kept for chat (P3 §8): task runs
            # wait; rule runs start only to be recorded skipped.
            and not (r.task_id and self._reserve_low(r.bot_id))
        ]
        rule_runs = {r.id for r in live if r.rule_id}
        for request in pick(self._slots, queued):
            self._slots.take(request.run_id, request.bot_id, priority_of(request.cause))
            if request.run_id in rule_runs and self._rule_starter is not None:
                try:
                    await self._rule_starter(request.run_id)
                except Exception:
                    # The rule runner ends its own runs; a starter that raised must not keep the slot.
                    log.exception("starting rule run %s failed", request.run_id)
                    self._slots.release(request.run_id)
                continue
            try:
                await self._start_run(request.run_id)
            except Exception:
                log.exception("starting run %s failed", request.run_id)
                self._slots.release(request.run_id)
                await self._end(request.run_id, "failed", error="the run could not start")

    async def _start_run(self, run_id: str) -> None:
        run = await self._db.read(lambda s: run_rows.get_run(s, run_id))
        assert run is not None
        task = await self._db.read(lambda s: task_rows.get_task(s, run.task_id))
        if task is None or task.ended_at:
            self._slots.release(run_id)
            await self._db.write(
                lambda s: run_rows.end_run(s, run_id, outcome="stopped", now=self._clock.time())
            )
            return
        if reached_budget(task.spent_usd, task.budget_usd):
            # Still over its budget (a person wrote while the budget question waits): the input is kept
            # untaken and the question is asked again (P3 §8).
            await self._end(run_id, "budget")
            return
        session = await self._open_session(task)
        session.refuse_tools("")
        now = self._clock.time()
        active = _Active(
            run_id,
            task.id,
            task.bot_id,
            session,
            nudged=bool(run.nudged),
            base_url=session.spec.model.base_url,
            spent_before=task.spent_usd,
            budget_usd=task.budget_usd,
            running=RunningTime(self._clock.monotonic()),
        )
        self._active[run_id] = active
        self._by_session[session.session_id] = run_id
        await self._db.write(lambda s: run_rows.set_run_state(s, run_id, "running", now=now))
        active.cap_timer = asyncio.get_running_loop().create_task(self._time_cap(run_id))
        self._publish(task.id)
        await self._hand_over_inputs(active)
        if session.status == "idle":
            # Nothing to do (every input was already taken before a restart): settle right away.
            self._spawn(self._check_settled(run_id))

    async def hand_over(self, run_id: str) -> bool:
        """Give the working run the task's inputs it has not taken yet, oldest first (a follow-up that
        arrived while it works). Safe to call at any time: the session takes each input once. False when
        the run has ended meanwhile: the caller must start another for the input."""
        active = self._active.get(run_id)
        if active is None:
            return False
        async with active.deciding:
            if self._active.get(run_id) is not active:
                return False
            await self._hand_over_inputs(active)
            return True

    async def _hand_over_inputs(self, active: _Active) -> None:
        """Always the whole list in order, never one input on its own: a follow-up arriving as the run
        starts must not reach the model before the brief."""
        session = active.session
        now = self._clock.time()
        pending = await self._db.read(lambda s: input_rows.untaken_inputs(s, active.task_id))
        # An input in the session's history was taken before a crash lost the marker: never twice.
        taken = [item for item in pending if session.has_taken(item.id)]
        fresh = [item for item in pending if not session.has_taken(item.id)]

        def delivered(s: Session) -> None:
            for item in taken:
                input_rows.mark_taken(s, item.id, now=now)
            for item in fresh:
                input_rows.mark_delivered(s, item.id, run_id=active.run_id, now=now)

        await self._db.write(delivered)
        for item in fresh:
            session.steer(item.text, item.id)

    async def _open_session(self, task: TaskRecord) -> AgentSession:
        assert self._runtime is not None
        session_id = task_session_id(task.id)
        existing = self._runtime.get(session_id)
        if existing is not None:
            return existing
        model = await self._bots.model_config(task.bot_id)
        # The preset is the task's snapshot from its creation (P3 §7); the writable root is the bot workspace.
        permission = await self._bots.permission(task.bot_id, preset=task.permission)
        spec = SessionSpec(
            session_id=session_id,
            kind="task",
            bot_id=task.bot_id,
            cwd=Path(task.folder),
            model=model,
            permission=permission,
            prompt_sections=(TASK_SECTION.format(title=task.title, folder=task.folder),),
            extra_tools=tuple(self._tools()),
            retry=self._retry,
        )
        return await self._runtime.open_session(spec)

    # ---- watching sessions --------------------------------------------------------------------------

    def _on_event(self, event: ev.AgentEvent) -> None:
        run_id = self._by_session.get(event.session_id)
        active = self._active.get(run_id) if run_id else None
        if active is None:
            return
        if isinstance(event, ev.InputTaken) and event.input_id.startswith("i_"):
            self._spawn(self._mark_taken(event.input_id))
        if isinstance(event, ev.AssistantMessage):
            active.tokens_in += event.usage.input_tokens
            active.tokens_out += event.usage.output_tokens
            self._count_cost(active, event)
        if active.activity.feed(event):
            self._bus.publish(RunStepAdded(active.task_id, active.run_id))
        if isinstance(event, ev.TurnEnded):
            if event.outcome == "error":
                active.error = event.error
            self._spawn(self._save_activity(active))
            self._spawn(self._check_settled(active.run_id))
        elif (isinstance(event, ev.StatusChanged) and event.status == "idle") or isinstance(
            event, ev.JobEnded
        ):
            self._spawn(self._check_settled(active.run_id))

    def _count_cost(self, active: _Active, event: ev.AssistantMessage) -> None:
        """Add the response's estimated cost; at the task's budget the turn is cancelled (P3 §8). A response
        that was in flight when the run stopped still counts."""
        cost = self._meter.price(
            event.model, active.base_url, event.usage, configured=active.session.spec.model.model
        )
        active.cost.add(cost)
        if cost is not None and cost.currency == "USD":
            self._on_cost(active.bot_id, float(cost.amount))
        spent = active.spent_before + active.cost.usd
        if not active.over_budget and not active.stopping and reached_budget(spent, active.budget_usd):
            active.over_budget = True
            self._spawn(self._stop_at(active.run_id, "budget"))

    async def _stop_at(self, run_id: str, outcome: RunOutcome, error: str = "") -> None:
        """Stop a run at a limit (budget or time): cancel its turn and jobs, keep its session usable."""
        active = self._active.get(run_id)
        if active is None or active.stopping:
            return
        active.stopping = True
        await halt(active.session, self._runtime)
        await self._end(run_id, outcome, error=error)

    async def _time_cap(self, run_id: str) -> None:
        """Fail the run once it has run for the cap (core.tasks.running_time says what counts)."""
        current = functools.partial(self._active.get, run_id)
        if await reach_cap(self._clock, self._run_cap_s, current, self._jobs_running):
            await self._stop_at(run_id, "failed", OVER_TIME)

    async def _mark_taken(self, input_id: str) -> None:
        now = self._clock.time()

        def mark(s: Session) -> None:
            input_rows.mark_taken(s, input_id, now=now)

        await self._db.write(mark)

    async def _save_activity(self, active: _Active) -> None:
        """The run's steps, tokens and cost so far, and the task's total (one run per task at a time, so
        the task's total is what it had before this run plus this run's)."""
        steps = active.activity.to_json()
        tokens = (active.tokens_in, active.tokens_out)
        cost = RunCost(active.cost.usd, dict(active.cost.other), active.cost.unpriced_calls)
        now = self._clock.time()

        def save(s: Session) -> None:
            before = run_rows.get_run(s, active.run_id)
            run_rows.update_run(
                s,
                active.run_id,
                activity=steps,
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                cost_usd=cost.usd,
                cost_other=cost.other,
                unpriced_calls=cost.unpriced_calls,
            )
            task = task_rows.get_task(s, active.task_id)
            if task is None or before is None:
                return
            task_rows.update_task(
                s,
                task.id,
                now=now,
                spent_usd=task.spent_usd + cost.usd - before.cost_usd,
                spent_other=_minus(add_amounts(task.spent_other, cost.other), before.cost_other),
                unpriced_calls=task.unpriced_calls + cost.unpriced_calls - before.unpriced_calls,
                last_used_at=now,
            )

        await self._db.write(save)

    def _jobs_running(self, session_id: str) -> bool:
        return self._runtime is not None and bool(self._runtime.jobs.running(session_id))

    async def _check_settled(self, run_id: str) -> None:
        active = self._active.get(run_id)
        if active is None or active.checking or active.stopping or active.session.status != "idle":
            return
        active.checking = True
        try:
            async with active.deciding:
                await self._decide(active)
        finally:
            active.checking = False

    async def _decide(self, active: _Active) -> None:
        """Settling, going on with an input that arrived, or ending with the Report's outcome."""
        run_id = active.run_id
        if active.session.status != "idle":
            return  # an input handed over just before this started a turn: its end looks again
        if self._jobs_running(active.session.session_id):
            await self._db.write(
                lambda s: run_rows.set_run_state(s, run_id, "settling", now=self._clock.time())
            )
            if active.settle_timer is None:
                active.settle_timer = asyncio.get_running_loop().create_task(self._settle_limit(run_id))
            self._publish(active.task_id)
            return
        untaken = await self._db.read(lambda s: input_rows.untaken_inputs(s, active.task_id))
        if untaken:
            # An input arrived while the session was finishing (an answer, a follow-up): it goes on.
            await self._hand_over_inputs(active)
            return
        report = active.report
        if report is not None:
            outcome: RunOutcome = "failed" if report.state == "progress" else report.state
            await self._end(run_id, outcome, error=report.message if report.state == "failed" else "")
        elif active.error:
            await self._end(run_id, "failed", error=active.error)
        elif not active.nudged:
            active.nudged = True
            await self._nudge(active)
        else:
            await self._end(run_id, "failed", error=NO_RESULT)

    async def _nudge(self, active: _Active) -> None:
        input_id = new_id("i")
        now = self._clock.time()

        def add(s: Session) -> None:
            input_rows.insert_input(s, id=input_id, kind="nudge", text=NUDGE, now=now, task_id=active.task_id)
            input_rows.mark_delivered(s, input_id, run_id=active.run_id, now=now)
            run_rows.update_run(s, active.run_id, nudged=True)

        await self._db.write(add)
        active.session.steer(NUDGE, input_id)

    async def _settle_limit(self, run_id: str) -> None:
        await self._clock.sleep(self._settle_limit_s)
        active = self._active.get(run_id)
        if active is None or self._runtime is None:
            return
        session_id = active.session.session_id
        commands = [job.command for job in self._runtime.jobs.running(session_id)]
        # The session is told at its next turn (P3 §11 "Job runs forever"): the note goes in first, so
        # that turn starts with it; the jobs' own "killed" notices follow.
        note = SETTLE_LIMIT_NOTE.format(jobs=", ".join(commands) or "none")
        input_id = new_id("i")
        now = self._clock.time()

        def add(s: Session) -> None:
            input_rows.insert_input(s, id=input_id, kind="note", text=note, now=now, task_id=active.task_id)
            input_rows.mark_delivered(s, input_id, run_id=run_id, now=now)

        await self._db.write(add)
        active.settle_timer = None
        active.session.steer(note, input_id)
        await self._runtime.jobs.kill_session(session_id)

    # ---- ending -------------------------------------------------------------------------------------

    async def stop_run(self, run_id: str, *, refuse: bool) -> None:
        """A person stopped the task: cancel its turn, kill its jobs, end the run `stopped`."""
        active = self._active.get(run_id)
        if active is not None:
            active.stopping = True
            if refuse:
                active.session.refuse_tools(STOPPED_REFUSAL)
            await halt(active.session, self._runtime)
        await self._end(run_id, "stopped", notify=False)

    async def reserve_changed(self, bot_id: str) -> None:
        """The bot's balance crossed its reserve. Below it, its working task runs stop and wait, queued, with
        a note to go on (P3 §8); above it again, they start as slots allow."""
        if self._reserve_low(bot_id):
            for active in [a for a in self._active.values() if a.bot_id == bot_id]:
                await self._park(active)
        self.poke()

    async def _park(self, active: _Active) -> None:
        if active.stopping or self._active.get(active.run_id) is not active:
            return  # stopping already, or it ended while earlier runs were parked: nothing to requeue
        active.stopping = True
        await halt(active.session, self._runtime)
        await self._end(active.run_id, "interrupted", error=RESERVE_PAUSE, notify=False)
        now = self._clock.time()
        task = await self._db.read(lambda s: task_rows.get_task(s, active.task_id))
        if task is None:
            return

        def requeue(s: Session) -> None:
            input_rows.insert_input(
                s, id=new_id("i"), kind="note", text=RESUME_NOTE, now=now, task_id=task.id
            )
            run_rows.insert_run(
                s,
                id=new_id("r"),
                bot_id=task.bot_id,
                session_id=task.session_id,
                cause="continue",
                now=now,
                task_id=task.id,
            )

        await self._db.write(requeue)
        self._publish(task.id)

    def wait_for_person(self, task_id: str, waiting: bool) -> None:
        """A task's call waits on an approval: its slot goes to other work meanwhile (P3 §7), and it takes
        one again, as a person's wake, once the person has decided."""
        run_id = self.active_run(task_id)
        active = self._active.get(run_id) if run_id else None
        if active is None or run_id is None:
            return
        active.running.hold(self._clock.monotonic(), waiting)
        if waiting:
            self._slots.release(run_id)
            self.poke()
        elif not self._slots.holds(run_id):
            try:
                self._slots.take(run_id, active.bot_id, Priority.PERSON_WAKE)
            except SlotError:
                # Every slot is busy: the approved call finishes anyway rather than wait behind queued work.
                log.info("run %s goes on over the slot limit after an approval", run_id)

    async def fail_run(self, run_id: str, error: str) -> None:
        """End a run as failed from outside its session (an approval timed out): stop its turn and jobs."""
        active = self._active.get(run_id)
        if active is not None:
            active.stopping = True
            await halt(active.session, self._runtime)
        await self._end(run_id, "failed", error=error)

    async def _end(self, run_id: str, outcome: RunOutcome, *, error: str = "", notify: bool = True) -> None:
        active = self._active.pop(run_id, None)
        now = self._clock.time()
        report = active.report if active else None
        report_json = json.dumps(report.to_json(), ensure_ascii=False) if report else None
        if active is not None:
            self._by_session.pop(active.session.session_id, None)
            cancel_timers(active.settle_timer, active.cap_timer)
            await self._save_activity(active)
            await self._release_session(active.session.session_id)

        def end(s: Session) -> tuple[RunRecord | None, TaskRecord | None]:
            run = run_rows.get_run(s, run_id)
            if run is None or run.state == "ended":
                return None, None
            run_rows.end_run(s, run_id, outcome=outcome, now=now, error=error, report=report_json)
            task = task_rows.get_task(s, run.task_id)
            if task is not None and report_json is not None:
                task_rows.update_task(s, task.id, now=now, report=report_json)
            # In the same transaction, so nobody sees a finished run with its questions still open.
            if task is not None and outcome in ("done", "failed"):
                withdraw_open_questions(s, task.id, now)
            if task is not None and outcome == "done":
                task_rows.update_task(s, task.id, now=now, ended_at=now, end_reason="done")
            if task is not None:
                task_rows.update_task(s, task.id, now=now, last_used_at=now)
            ended, current = run_rows.get_run(s, run_id), task_rows.get_task(s, run.task_id)
            if notify and ended is not None and current is not None:
                self._owed_pushes(s, ended, current, report)
            return ended, current

        run, task = await self._db.write(end)
        self._slots.release(run_id)
        self.poke()
        if run is None or task is None:
            return
        if notify:
            await self._on_finished(run, task, report)
        self._publish(task.id)

    async def _release_session(self, session_id: str) -> None:
        """A finished run's session leaves memory (its history stays on disk; a follow-up reopens it), so
        memory does not grow with every task ever run."""
        runtime = self._runtime
        if runtime is None or session_id in self._by_session:
            return
        session = runtime.get(session_id)
        if session is not None and session.status == "idle" and not runtime.jobs.running(session_id):
            await runtime.close_session(session_id)

    def _publish(self, task_id: str) -> None:
        self._bus.publish(TaskChanged(task_id))
