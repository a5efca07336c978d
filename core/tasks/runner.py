"""Runs of background tasks on the background lane (docs/runs.md).

A run goes `queued -> running <-> settling -> ended` (core.runs.driver drives it). It holds a slot while
running or settling. It takes the task's untaken inputs, and ends when the session is quiet (no turn, no
jobs) with the outcome its Report gives. This module decides what a task run means: which queued run starts
when, what counts against the task's budget, what goes on with a follow-up, and what its end writes and
owes the conversation. Writes to tasks, runs and run_inputs go through here or TaskService.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from core.agent.model_config import RetryPolicy
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import ToolSpec
from core.bots.service import BotService
from core.bus import EventBus
from core.changes import RunStepAdded, TaskChanged
from core.clock import Clock
from core.cost.meter import RunCost, reached_budget
from core.ids import new_id
from core.runs.background_runner import BackgroundRunner
from core.runs.live_run import LiveRun
from core.runs.policy import SETTLE_LIMIT_S, Ending, RunLimits, SettleLimit, TimeCap
from core.runs.spending import RunSpending
from core.store import bots as bot_rows
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.amounts import add_amounts
from core.store.database import Database
from core.store.runs import RunOutcome, RunRecord
from core.store.tasks import TaskRecord
from core.tasks.goal_rounds import GoalRounds
from core.tasks.language import language_of
from core.tasks.prompts import NUDGE, SETTLE_LIMIT_NOTE, TASK_SECTION
from core.tasks.report import Report
from core.tasks.slots import Priority, SlotError, Slots, pick, priority_of
from core.tasks.slots import QueuedRun as SlotRequest
from core.tasks.withdraw import withdraw_open_questions
from core.translations import text

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.agent.session import AgentSession

__all__ = ["SETTLE_LIMIT_S", "TASK_LIMITS", "TASK_PREFIX", "TASK_RETRY", "TaskRunner", "task_session_id"]

log = logging.getLogger(__name__)

TASK_RETRY = RetryPolicy(delays_s=(15.0, 30.0, 60.0))  # docs/runs.md#model-call-retries
# docs/runs.md#the-time-cap: running time per task run, time waiting on a person excluded
RUN_CAP_S = 4 * 3600.0
OVER_TIME = text("zh", "run.over_time")
TASK_LIMITS = RunLimits(
    TASK_RETRY, TimeCap(RUN_CAP_S, OVER_TIME), SettleLimit(SETTLE_LIMIT_S, SETTLE_LIMIT_NOTE)
)
RESERVE_PAUSE = text("zh", "run.reserve_pause")
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
class TaskWork:
    """What a working task run knows of its task. Cost (docs/cost.md): what the task had spent before this run
    and its budget, which a person may change while it works."""

    task_id: str
    spent_before: float
    budget_usd: float
    # Why a goal task's rounds stopped without the goal met (docs/goals.md#rounds): the run fails with it.
    goal_stop: str = ""
    goal_stop_words: dict[str, str] = field(default_factory=dict)  # the same in each language
    # A planned task's subtask counts against the planned task's budget (docs/plans.md#budget): its id,
    # and how much of this run's spend is saved in the rows already.
    pool: str = ""
    saved_usd: float = 0.0


TaskRun = LiveRun[TaskWork]


def _minus(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: v - b.get(k, 0.0) for k, v in a.items()}


def task_session_id(task_id: str) -> str:
    return f"{TASK_PREFIX}{task_id}"


@dataclass
class TaskRunPolicy:
    """What the lifecycle of a task run means for its task (a RunPolicy): its spend counts against the
    task's budget, follow-ups keep it going, and its end updates the task and owes its conversation a push."""

    saves_every_turn = True  # the task's panel shows the steps and spend while it works
    session_outlives_run = True  # a follow-up reopens the task's session for the next run

    db: Database
    bus: EventBus
    clock: Clock
    limits: RunLimits
    release: Callable[[str], None]  # gives the run's slot back, so the next queued run may start
    on_finished: Finished
    owed_pushes: OwedPushes
    goals: GoalRounds | None = None
    # What each planned task has spent as saved in its row, kept as its subtasks' spend is saved; and the
    # working runs of its subtasks, whose unsaved spend counts too.
    pool_spent: dict[str, float] = field(default_factory=dict)
    pool_runs: Callable[[str], list[TaskRun]] = lambda _pool: []

    def changed(self, run: TaskRun) -> None:
        self.bus.publish(TaskChanged(run.work.task_id))

    def step_added(self, run: TaskRun) -> None:
        self.bus.publish(RunStepAdded(run.work.task_id, run.run_id))

    def past_budget(self, run: TaskRun) -> Ending | None:
        pool = run.work.pool
        if pool:
            unsaved = sum(r.cost.usd - r.work.saved_usd for r in self.pool_runs(pool))
            spent = self.pool_spent.get(pool, 0.0) + unsaved
        else:
            spent = run.work.spent_before + run.cost.usd
        return Ending("budget") if reached_budget(spent, run.work.budget_usd) else None

    def count_spend(self, s: Session, run: TaskRun, cost: RunCost, before: RunRecord, now: float) -> None:
        """The task's total: one run per task at a time, so it is what the task had before this run plus
        this run's."""
        task = task_rows.get_task(s, run.work.task_id)
        if task is None:
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
        run.work.saved_usd = cost.usd
        parent = task_rows.get_task(s, task.parent_id) if task.parent_id else None
        if parent is not None:
            # A subtask's spend is its planned task's too: that is the budget it counts against.
            spent = parent.spent_usd + cost.usd - before.cost_usd
            task_rows.update_task(
                s,
                parent.id,
                now=now,
                spent_usd=spent,
                spent_other=_minus(add_amounts(parent.spent_other, cost.other), before.cost_other),
                unpriced_calls=parent.unpriced_calls + cost.unpriced_calls - before.unpriced_calls,
            )
            self.pool_spent[parent.id] = spent

    async def take_inputs(self, run: TaskRun) -> bool:
        untaken = await self.db.read(lambda s: input_rows.untaken_inputs(s, run.work.task_id))
        if not untaken:
            return False
        # An input arrived while the session was finishing (an answer, a follow-up): it goes on.
        await self.hand_over_inputs(run)
        return True

    async def hand_over_inputs(self, run: TaskRun) -> None:
        """Always the whole list in order, never one input on its own: a follow-up arriving as the run
        starts must not reach the model before the brief."""
        session = run.session
        now = self.clock.time()
        pending = await self.db.read(lambda s: input_rows.untaken_inputs(s, run.work.task_id))
        # An input in the session's history was taken before a crash lost the marker: never twice.
        taken = [item for item in pending if session.has_taken(item.id)]
        fresh = [item for item in pending if not session.has_taken(item.id)]

        def delivered(s: Session) -> None:
            for item in taken:
                input_rows.mark_taken(s, item.id, now=now)
            for item in fresh:
                input_rows.mark_delivered(s, item.id, run_id=run.run_id, now=now)

        await self.db.write(delivered)
        for item in fresh:
            session.steer(item.text, item.id)

    async def review(self, run: TaskRun) -> bool:
        return self.goals is not None and await self.goals.review(run)

    def verdict(self, run: TaskRun) -> Ending | None:
        if run.work.goal_stop:
            return Ending("failed", run.work.goal_stop)
        report = run.report
        if report is None:
            return None
        outcome: RunOutcome = "failed" if report.state == "progress" else report.state
        return Ending(outcome, report.message if report.state == "failed" else "")

    async def nudge(self, run: TaskRun) -> None:
        input_id = new_id("i")
        now = self.clock.time()

        def add(s: Session) -> None:
            task_id = run.work.task_id
            input_rows.insert_input(s, id=input_id, kind="nudge", text=NUDGE, now=now, task_id=task_id)
            input_rows.mark_delivered(s, input_id, run_id=run.run_id, now=now)
            run_rows.update_run(s, run.run_id, nudged=True)

        await self.db.write(add)
        run.session.steer(NUDGE, input_id)

    async def record_note(self, run: TaskRun, text: str) -> str | None:
        input_id = new_id("i")
        now = self.clock.time()

        def add(s: Session) -> None:
            input_rows.insert_input(s, id=input_id, kind="note", text=text, now=now, task_id=run.work.task_id)
            input_rows.mark_delivered(s, input_id, run_id=run.run_id, now=now)

        await self.db.write(add)
        return input_id

    async def record_end(self, run_id: str, run: TaskRun | None, ending: Ending, *, notify: bool) -> None:
        now = self.clock.time()
        report = run.report if run else None
        # The model's error in each language, when the run failed with it (not a cap or a missing Report).
        words = dict(run.error_words) if run and ending.error and ending.error == run.error else {}
        if run and ending.error and ending.error == run.work.goal_stop:
            words = dict(run.work.goal_stop_words)
        report_json = json.dumps(report.to_json(), ensure_ascii=False) if report else None
        outcome = ending.outcome

        def end(s: Session) -> tuple[RunRecord | None, TaskRecord | None]:
            record = run_rows.get_run(s, run_id)
            if record is None or record.state == "ended":
                return None, None
            run_rows.end_run(
                s, run_id, outcome=outcome, now=now, error=ending.error, report=report_json, error_words=words
            )
            task = task_rows.get_task(s, record.task_id)
            if task is not None and report_json is not None:
                task_rows.update_task(s, task.id, now=now, report=report_json)
            # In the same transaction, so nobody sees a finished run with its questions still open.
            if task is not None and outcome in ("done", "failed"):
                withdraw_open_questions(s, task.id, now)
            if task is not None and outcome == "done":
                task_rows.update_task(s, task.id, now=now, ended_at=now, end_reason="done")
            if task is not None:
                task_rows.update_task(s, task.id, now=now, last_used_at=now)
            ended, current = run_rows.get_run(s, run_id), task_rows.get_task(s, record.task_id)
            if notify and ended is not None and current is not None:
                # The push reads the reason in the conversation's language; the row keeps the English.
                said = ended.error_in(language_of(current.brief))
                self.owed_pushes(s, replace(ended, error=said), current, report)
            return ended, current

        ended, task = await self.db.write(end)
        self.release(run_id)
        if ended is None or task is None:
            return
        if notify:
            await self.on_finished(ended, task, report)
        self.bus.publish(TaskChanged(task.id))


class TaskRunner(BackgroundRunner[TaskWork]):
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
        spending: RunSpending,
        limits: RunLimits = TASK_LIMITS,
    ) -> None:
        self._slots = slots
        self._tools = tools
        self._policy = TaskRunPolicy(db, bus, clock, limits, self.release, on_finished, owed_pushes)
        super().__init__(db, bus, clock, bots, self._policy, spending, limits.retry)
        self._policy.goals = GoalRounds(db, bus, clock, lambda: self._runtime, self._driver.count_usage)
        self._policy.pool_runs = lambda pool: [r for r in self._driver.runs() if r.work.pool == pool]
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._rule_starter: RuleStarter | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self, runtime: AgentRuntime) -> None:
        self._attach(runtime)
        self._loop = asyncio.get_running_loop().create_task(self._schedule_loop(), name="task-scheduler")
        self.poke()

    async def stop(self) -> None:
        """Stop scheduling. Running sessions are closed by the runtime; their runs are recovered at start."""
        self._driver.detach()
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        await self._driver.close()

    def poke(self) -> None:
        """Something changed (a run was queued or a slot freed): look for runs to start."""
        self._wake.set()

    def serve_rule_runs(self, start: RuleStarter) -> None:
        """Queued rule runs take background slots here too, in one order with task runs
        (docs/runs.md#the-background-lane-and-slots), so the caps hold for both: `start(run_id)` is awaited
        once the run holds its slot. The rule runner gives the slot back with `release`."""
        self._rule_starter = start

    def release(self, run_id: str) -> None:
        """A run (a task's or a rule's) ended: its slot is free for the next queued run."""
        self._slots.release(run_id)
        self.poke()

    def set_budget(self, task_id: str, budget_usd: float) -> None:
        """A person changed the task's budget: a working run counts against the new one from now on (a
        planned task's subtasks' runs too)."""
        for run in self._driver.runs():
            if task_id in (run.work.task_id, run.work.pool):
                run.work.budget_usd = budget_usd

    def active_run(self, task_id: str) -> str | None:
        return next((r.run_id for r in self._driver.runs() if r.work.task_id == task_id), None)

    def live_steps(self, run_id: str) -> list[dict[str, object]] | None:
        """The steps of a run that is working now, as far as they go (None when it isn't active): the
        stored activity is written only when a turn ends."""
        run = self._driver.live(run_id)
        return run.activity.to_json() if run else None

    def model_wait_since(self, run_id: str) -> float | None:
        """When the working run sent the model request it still waits on; None when it waits on none."""
        run = self._driver.live(run_id)
        return run.model_wait_since if run else None

    def model_priced(self, task_id: str) -> bool | None:
        """Whether the model the task's working run talks to has a price (the user's own included); None
        when no run works, so the model is not known here."""
        run = next((r for r in self._driver.runs() if r.work.task_id == task_id), None)
        return self._driver.model_priced(run) if run else None

    def record_report(self, session_id: str, report: Report) -> bool:
        """Keep the latest Report of the run this session works for; False when no run is active."""
        run = self._driver.of_session(session_id)
        if run is None or run.stopping:
            return False
        # Progress and a question with a default are not where the run ends: it goes on.
        asks_and_goes_on = (
            report.state == "needs_you"
            and report.question is not None
            and report.question.default is not None
        )
        if report.state != "progress" and not asks_and_goes_on:
            run.report = report
        return True

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
            # A paused bot starts no new run (docs/runs.md#the-background-lane-and-slots); its queued runs
            # wait for the unpause.
            if r.state == "queued"
            and (r.task_id or (r.rule_id and self._rule_starter is not None))
            and self._driver.live(r.id) is None
            and r.bot_id not in paused
            # Below the reserve, what is left of the bot's balance is kept for chat
            # (docs/cost.md#the-chat-reserve): task runs wait; rule runs start only to be recorded skipped.
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
                await self._driver.end(request.run_id, Ending("failed", "the run could not start"))

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
        # A subtask counts against its planned task's budget (docs/plans.md#budget).
        pool = (
            await self._db.read(lambda s: task_rows.get_task(s, task.parent_id)) if task.parent_id else None
        )
        counted = pool or task
        if reached_budget(counted.spent_usd, counted.budget_usd):
            # Still over its budget (a person wrote while the budget question waits): the input is kept
            # untaken and the question is asked again (docs/cost.md#task-budget).
            await self._driver.end(run_id, Ending("budget"))
            return
        session = await self._open_session(task)
        session.refuse_tools("")
        work = TaskWork(
            task.id, spent_before=task.spent_usd, budget_usd=counted.budget_usd, pool=pool.id if pool else ""
        )
        if pool is not None:
            self._policy.pool_spent[pool.id] = pool.spent_usd
        live = await self._driver.begin(run_id, task.bot_id, session, work, nudged=bool(run.nudged))
        await self._policy.hand_over_inputs(live)
        if session.status == "idle":
            # Nothing to do (every input was already taken before a restart): settle right away.
            self._driver.settle_soon(run_id)

    async def hand_over(self, run_id: str) -> bool:
        """Give the working run the task's inputs it has not taken yet, oldest first (a follow-up that
        arrived while it works). Safe to call at any time: the session takes each input once. False when
        the run has ended meanwhile: the caller must start another for the input."""
        run = self._driver.live(run_id)
        if run is None:
            return False
        async with run.deciding:
            if self._driver.live(run_id) is not run:
                return False
            await self._policy.hand_over_inputs(run)
            return True

    async def _open_session(self, task: TaskRecord) -> AgentSession:
        assert self._runtime is not None
        session_id = task_session_id(task.id)
        existing = self._runtime.get(session_id)
        if existing is not None:
            return existing
        model = await self._bots.model_config(task.bot_id)
        # The preset is the task's snapshot from its creation (docs/permissions.md#who-gets-which-preset); the
        # writable root is the bot workspace.
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

    # ---- stopping -----------------------------------------------------------------------------------

    async def stop_run(self, run_id: str, *, refuse: bool) -> None:
        """A person stopped the task: cancel its turn, kill its jobs, end the run `stopped`."""
        run = self._driver.live(run_id)
        if run is not None and refuse:
            run.session.refuse_tools(STOPPED_REFUSAL)
        await self._driver.stop(run_id, Ending("stopped"), notify=False)

    async def stop_at_budget(self, run_id: str) -> None:
        """Its planned task reached its budget (docs/plans.md#budget): the run stops as at its own, quietly
        (the planned task asks the budget question once for all)."""
        await self._driver.stop(run_id, Ending("budget"), notify=False)

    async def reserve_changed(self, bot_id: str) -> None:
        """The bot's balance crossed its reserve. Below it, its working task runs stop and wait, queued, with
        a note to go on (docs/cost.md#the-chat-reserve); above it again, they start as slots allow."""
        if self._reserve_low(bot_id):
            for run in [r for r in self._driver.runs() if r.bot_id == bot_id]:
                await self._park(run)
        self.poke()

    async def _park(self, run: TaskRun) -> None:
        if run.stopping or self._driver.live(run.run_id) is not run:
            return  # stopping already, or it ended while earlier runs were parked: nothing to requeue
        await self._driver.stop(run.run_id, Ending("interrupted", RESERVE_PAUSE), notify=False)
        now = self._clock.time()
        task = await self._db.read(lambda s: task_rows.get_task(s, run.work.task_id))
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
        self._bus.publish(TaskChanged(task.id))

    def wait_for_person(self, task_id: str, waiting: bool) -> None:
        """A task's call waits on an approval: its slot goes to other work meanwhile
        (docs/attention.md#approvals), and it takes one again, as a person's wake, once the person has
        decided."""
        run_id = self.active_run(task_id)
        run = self._driver.live(run_id) if run_id else None
        if run is None or run_id is None:
            return
        self._driver.hold(run_id, waiting)
        if waiting:
            self._slots.release(run_id)
            self.poke()
        elif not self._slots.holds(run_id):
            try:
                self._slots.take(run_id, run.bot_id, Priority.PERSON_WAKE)
            except SlotError:
                # Every slot is busy: the approved call finishes anyway rather than wait behind queued work.
                log.info("run %s goes on over the slot limit after an approval", run_id)

    async def fail_run(self, run_id: str, error: str) -> None:
        """End a run as failed from outside its session (an approval timed out): stop its turn and jobs."""
        await self._driver.stop(run_id, Ending("failed", error))
